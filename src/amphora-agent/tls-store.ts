/**
 * The amphora's TLS directory: private keys, CA bundles and CRLs as HAProxy reads them, in a
 * directory only the agent's user can enter, each file owner-only. Nothing else of the agent
 * holds them on disk except applied-config.json (owner-only too), which it re-applies at start.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomically } from './atomic-file.js';
import type { TlsFile } from './haproxy/tls-files.js';

export class TlsStore {
  constructor(readonly dir: string) {}

  /** Writes `files`; returns what puts back the content they replace (and removes the ones that are new). */
  write(files: readonly TlsFile[]): () => void {
    if (!files.length) return () => undefined;
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // mkdir's mode is masked by the umask and ignored for an existing directory.
    chmodSync(this.dir, 0o700);
    const previous = new Map(files.map((f) => [f.name, this.read(f.name)]));
    for (const file of files) if (previous.get(file.name) !== file.pem) writeFileAtomically(this.path(file.name), file.pem, 0o600);
    return () => {
      for (const [name, content] of previous) {
        if (content === null) rmSync(this.path(name), { force: true });
        else writeFileAtomically(this.path(name), content, 0o600);
      }
    };
  }

  /** Removes every file not in `keep`: a key no longer served does not stay behind. */
  prune(keep: readonly TlsFile[]): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    const kept = new Set(keep.map((f) => f.name));
    for (const name of names) if (!kept.has(name)) rmSync(this.path(name), { force: true });
  }

  path(name: string): string {
    return join(this.dir, name);
  }

  private read(name: string): string | null {
    try {
      return readFileSync(this.path(name), 'utf8');
    } catch {
      return null;
    }
  }
}
