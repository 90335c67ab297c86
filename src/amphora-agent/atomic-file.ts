import { renameSync, writeFileSync } from 'node:fs';

/** Replaces `file` by rename, so a crash leaves the old content or the new, never half of one. */
export function writeFileAtomically(file: string, content: string, mode = 0o600): void {
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, content, { mode });
  renameSync(temporary, file);
}
