// Uploads: small files in the request (POST /kb/{id}/documents), larger ones by presigned POST straight
// to storage (POST /kb/{id}/uploads, then the form to the URL it gives), each with its progress.
import { ApiError, errorFromText, post, sendWithProgress } from "./api";
import type { PageConfig } from "./auth";

export interface UploadState {
  key: number;
  name: string;
  size: number;
  progress: number; // 0..1
  state: "sending" | "accepted" | "failed";
  message: string;
}

export const LONG_PASTE_CHARS = 2000;

export function mb(n: number): string {
  return `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;
}

export async function uploadFile(
  kbId: string,
  file: File,
  config: PageConfig,
  onProgress: (fraction: number) => void,
): Promise<void> {
  if (file.size > config.max_upload_bytes) {
    throw new ApiError(413, "FILE_TOO_LARGE", `${file.name} is ${mb(file.size)}; this deployment accepts files up to ${mb(config.max_upload_bytes)}.`);
  }
  if (file.size <= config.direct_upload_max_bytes) {
    const form = new FormData();
    form.append("file", file, file.name);
    const r = await sendWithProgress(`/kb/${encodeURIComponent(kbId)}/documents`, form, onProgress, true);
    if (r.status >= 400) throw errorFromText(r.status, r.text);
    return;
  }
  const accepted = await post<{ upload: { url: string; fields: Record<string, string> } }>(
    `/kb/${encodeURIComponent(kbId)}/uploads`,
    { filename: file.name, size: file.size },
  );
  const form = new FormData();
  for (const [k, v] of Object.entries(accepted.upload.fields)) form.append(k, v);
  form.append("file", file, file.name); // last, as S3 requires
  const r = await sendWithProgress(accepted.upload.url, form, onProgress, false);
  if (r.status >= 400) throw errorFromText(r.status, r.text);
}

/** A drag that carries files (not a selection of text, nor a link). */
export function carriesFiles(e: DragEvent): boolean {
  return Array.from(e.dataTransfer?.types ?? []).includes("Files");
}

/** A long paste becomes a .txt document (seed 000). */
export function pastedFile(text: string, now = new Date()): File {
  const stamp = now.toISOString().replace(/[:.]/g, "-").replace(/Z$/, "");
  return new File([text], `pasted-${stamp}.txt`, { type: "text/plain" });
}
