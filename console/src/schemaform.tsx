// A form drawn from a JSON schema (a connector's config_schema, pydantic's output): strings, numbers,
// booleans, enums and lists of strings get a control each; anything else is edited as JSON. A new
// connector needs no console change.
import type { JsonSchema } from "./types";
import { Field } from "./ui";

/** The schema of a property without its null alternative (pydantic writes Optional as anyOf). */
function plain(s: JsonSchema, root: JsonSchema): JsonSchema {
  let out = s;
  if (s.$ref) {
    const name = s.$ref.split("/").pop() ?? "";
    out = { ...(root.$defs?.[name] ?? {}), title: s.title, description: s.description, default: s.default };
  }
  if (out.anyOf) {
    const rest = out.anyOf.filter((a) => a.type !== "null");
    if (rest.length === 1) out = { ...plain(rest[0], root), title: out.title, description: out.description, default: out.default };
  }
  return out;
}

function kind(s: JsonSchema): string {
  if (s.enum) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t === "array" && s.items && (s.items.type === "string" || !s.items.type)) return "list";
  return t ?? "json";
}

export function initialValues(schema: JsonSchema): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    const s = plain(raw, schema);
    const d = s.default;
    if (d === undefined || d === null) out[name] = "";
    else if (kind(s) === "list" && Array.isArray(d)) out[name] = d.join(", ");
    else if (typeof d === "object") out[name] = JSON.stringify(d);
    else out[name] = String(d);
  }
  return out;
}

/** The values as the API takes them; a field left empty is left out (its default applies). */
export function toConfig(schema: JsonSchema, values: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(schema.properties ?? {})) {
    const s = plain(raw, schema);
    const v = values[name] ?? "";
    const k = kind(s);
    if (k === "boolean") out[name] = v === "true";
    else if (v.trim() === "") continue;
    else if (k === "integer" || k === "number") out[name] = Number(v);
    else if (k === "list") out[name] = v.split(",").map((x) => x.trim()).filter(Boolean);
    else if (k === "json" || k === "object") {
      try {
        out[name] = JSON.parse(v);
      } catch {
        out[name] = v; // the API refuses it by field, in its words
      }
    } else out[name] = v;
  }
  return out;
}

export function SchemaForm(props: {
  schema: JsonSchema;
  values: Record<string, string>;
  onChange: (values: Record<string, string>) => void;
  prefix: string;
  errors: Record<string, string>;
}) {
  const required = new Set(props.schema.required ?? []);
  return (
    <>
      {Object.entries(props.schema.properties ?? {}).map(([name, raw]) => {
        const s = plain(raw, props.schema);
        const k = kind(s);
        const value = props.values[name] ?? "";
        const set = (v: string) => props.onChange({ ...props.values, [name]: v });
        const label = `${s.title ?? name}${required.has(name) ? " (required)" : ""}`;
        const fieldError = props.errors[`config.${name}`] ?? props.errors[name];
        const hint = [s.description, k === "list" ? "Comma-separated." : "", fieldError ?? ""].filter(Boolean).join(" ");
        const id = `${props.prefix}-${name}`;
        let control;
        if (k === "boolean")
          control = <input id={id} name={name} type="checkbox" checked={value === "true"} onChange={(e) => set(String((e.target as HTMLInputElement).checked))} />;
        else if (k === "enum")
          control = (
            <select id={id} name={name} value={value} onChange={(e) => set((e.target as HTMLSelectElement).value)}>
              {required.has(name) ? null : <option value="">(default)</option>}
              {(s.enum ?? []).map((o) => (
                <option key={String(o)} value={String(o)}>
                  {String(o)}
                </option>
              ))}
            </select>
          );
        else if (k === "json" || k === "object")
          control = <textarea id={id} name={name} rows={3} value={value} onInput={(e) => set((e.target as HTMLTextAreaElement).value)} />;
        else
          control =
            k === "integer" || k === "number" ? (
              <input id={id} name={name} type="number" required={required.has(name)} value={value}
                aria-invalid={fieldError ? true : undefined} onInput={(e) => set((e.target as HTMLInputElement).value)} />
            ) : (
              <input id={id} name={name} type="text" required={required.has(name)} value={value}
                aria-invalid={fieldError ? true : undefined} onInput={(e) => set((e.target as HTMLInputElement).value)} />
            );
        return (
          <Field key={name} label={label} hint={hint}>
            {control}
          </Field>
        );
      })}
    </>
  );
}
