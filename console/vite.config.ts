import { defineConfig } from "vite";

// Built into the console function's own folder: `sam build` packages it with that function only.
export default defineConfig({
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../functions/console/static",
    emptyOutDir: true,
    // Nothing inline: the Content-Security-Policy allows only the page's own origin (no data: URIs,
    // no inline script for a module-preload polyfill every supported browser does without).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    cssCodeSplit: false,
    target: "es2020",
  },
});
