// Every call the console makes is an ordinary API call with the signed-in user's bearer token.
import { getToken, signOut } from "./auth";

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public fields: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** The sentence an API error carries (R-ERR-1), with any field refusals after it. */
export function sentence(err: unknown): string {
  if (err instanceof ApiError) {
    const fields = Object.entries(err.fields).map(([f, why]) => `${f}: ${why}`);
    return [err.message, ...fields].join(" ");
  }
  return err instanceof Error ? err.message : String(err);
}

async function errorOf(resp: Response): Promise<ApiError> {
  try {
    const body = await resp.json();
    const e = body?.error ?? {};
    const fields = e.details?.fields && typeof e.details.fields === "object" ? e.details.fields : {};
    return new ApiError(resp.status, String(e.code ?? resp.status), String(e.message ?? resp.statusText), fields);
  } catch {
    return new ApiError(resp.status, String(resp.status), `The API answered ${resp.status} ${resp.statusText}.`);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Authorization: `Bearer ${getToken()}` };
  let payload: BodyInit | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const resp = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
  if (resp.status === 401) {
    signOut("Your sign-in has expired or was refused: sign in again.");
    throw await errorOf(resp);
  }
  if (!resp.ok) throw await errorOf(resp);
  if (resp.status === 204) return undefined as T;
  return (await resp.json()) as T;
}

export const get = <T>(path: string) => api<T>("GET", path);
export const post = <T>(path: string, body?: unknown) => api<T>("POST", path, body ?? {});
export const del = <T>(path: string) => api<T>("DELETE", path);

export function q(params: Record<string, string | number | undefined | null>): string {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") s.set(k, String(v));
  const text = s.toString();
  return text ? `?${text}` : "";
}

/** An upload through XMLHttpRequest, for its progress events. */
export function sendWithProgress(
  url: string,
  form: FormData,
  onProgress: (fraction: number) => void,
  bearer: boolean,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    if (bearer) xhr.setRequestHeader("Authorization", `Bearer ${getToken()}`);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => resolve({ status: xhr.status, text: xhr.responseText });
    xhr.onerror = () => reject(new Error("The upload could not reach the server."));
    xhr.send(form);
  });
}

export function errorFromText(status: number, text: string): ApiError {
  try {
    const e = JSON.parse(text)?.error ?? {};
    return new ApiError(status, String(e.code ?? status), String(e.message ?? `The upload failed (${status}).`),
      e.details?.fields ?? {});
  } catch {
    // S3 answers XML: its Message element is the sentence.
    const m = /<Message>([^<]*)<\/Message>/.exec(text);
    return new ApiError(status, String(status), m ? m[1] : `The upload failed (${status}).`);
  }
}
