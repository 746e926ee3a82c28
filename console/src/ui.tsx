// Small pieces every screen uses. Everything a document holds is rendered as text (JSX children):
// the console never sets innerHTML.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { sentence } from "./api";

export function ErrorLine({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {sentence(error)}
    </p>
  );
}

/** Load once per dependency change; the error is the API's sentence. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [T | undefined, unknown, () => void] {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (v) => live && (setValue(v), setError(null)),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return [value, error, () => setTick((t) => t + 1)];
}

/** A button that asks again in place (no native dialog) before it acts. */
export function ConfirmButton(props: { label: string; confirm: string; onConfirm: () => void; danger?: boolean }) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class={props.danger ? "danger" : ""} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  return (
    <span class="confirm" role="group" aria-label={props.confirm}>
      <span>{props.confirm}</span>
      <button type="button" class="danger" onClick={() => (setAsking(false), props.onConfirm())}>
        Yes
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        No
      </button>
    </span>
  );
}

export function Field(props: { label: string; hint?: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span class="label">{props.label}</span>
      {props.children}
      {props.hint ? <span class="hint">{props.hint}</span> : null}
    </label>
  );
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString() : "";
}

export function navigate(route: string) {
  location.hash = route;
}
