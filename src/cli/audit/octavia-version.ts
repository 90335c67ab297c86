/**
 * Is an Octavia in an advisory's affected ranges? From a release version as its operator reads it
 * (`pip show octavia`, a package's version), or from its endpoint, whose version document gives only
 * the newest API version it serves: that narrows the release to a range, which may straddle a fix.
 */
import { coerce, intersects, subset } from 'semver';
import type { Advisory } from './advisory.js';

export type Exposure = 'affected' | 'not affected' | 'undetermined';

export interface VersionVerdict {
  /** What was judged: a release version, or the range an endpoint's API version allows. */
  releases: string;
  source: string;
  fixes: Array<{ fix: string; cves: string[]; missing: Exposure; affected: string[] }>;
  verdict: Exposure;
  reason: string;
}

/**
 * The first Octavia release serving each newer API version (api-ref and release notes); Octavia's v2 API
 * was first served by 1.0.0 (Pike). Newest first.
 */
const FIRST_RELEASE_OF_API: ReadonlyArray<{ api: [number, number]; release: string }> = [
  { api: [2, 29], release: '16.0.0' },
  { api: [2, 28], release: '14.0.0' },
  { api: [2, 27], release: '13.0.0' },
  { api: [2, 0], release: '1.0.0' },
];

function judge(advisory: Advisory, releases: string, source: string, subject: string): VersionVerdict {
  const fixes = advisory.fixes.map((fix) => {
    const ranges = fix.affected.join(' || ');
    const missing: Exposure = subset(releases, ranges) ? 'affected' : intersects(releases, ranges) ? 'undetermined' : 'not affected';
    return { fix: fix.name, cves: fix.cves, missing, affected: fix.affected };
  });
  const verdict: Exposure = fixes.some((f) => f.missing === 'affected') ? 'affected' : fixes.some((f) => f.missing === 'undetermined') ? 'undetermined' : 'not affected';
  const lacking = fixes.filter((f) => f.missing === 'affected').map((f) => `the ${f.fix} fix (${f.cves.join(', ')})`);
  const unsure = fixes.filter((f) => f.missing === 'undetermined').map((f) => f.fix);
  const reason =
    verdict === 'affected'
      ? `${subject} lacks ${lacking.join(' and ')}: upgrade to a release outside ${[...new Set(fixes.flatMap((f) => f.affected))].join(', ')} (every fix of ${advisory.id} is needed)`
      : verdict === 'undetermined'
        ? `${subject} may or may not have the ${unsure.join(' and ')} fix: its releases ${releases} straddle the fixed ones; read the release version itself (pip show octavia, or the distribution's package) and run ostia audit --octavia-version with it`
        : `${subject} has every fix of ${advisory.id}`;
  return { releases, source, fixes, verdict, reason };
}

/** An operator's version string: 16.1.0, 17.0.1.dev3, 2024.2's 15.0.0 … */
export function judgeRelease(advisory: Advisory, version: string): VersionVerdict {
  const parsed = coerce(version);
  if (!parsed) throw new Error(`'${version}' is not an Octavia release version such as 16.1.0`);
  return judge(advisory, parsed.version, `version ${version}`, `Octavia ${parsed.version}`);
}

/** The releases that serve `apiVersion` (e.g. v2.30) as their newest. */
export function releasesServing(apiVersion: string): string {
  const m = /^v?(\d+)\.(\d+)$/.exec(apiVersion);
  if (!m) throw new Error(`'${apiVersion}' is not an Octavia API version such as v2.30`);
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const index = FIRST_RELEASE_OF_API.findIndex(({ api }) => major > api[0] || (major === api[0] && minor >= api[1]));
  if (index < 0) throw new Error(`API ${apiVersion} is older than any Octavia v2`);
  const newer = FIRST_RELEASE_OF_API[index - 1];
  return `>=${FIRST_RELEASE_OF_API[index]!.release}${newer ? ` <${newer.release}` : ''}`;
}

/** The newest API version `url`'s version document lists, judged as the releases that serve it. */
export async function judgeEndpoint(advisory: Advisory, url: string, signal: AbortSignal): Promise<VersionVerdict> {
  const root = `${url.replace(/\/+$/, '')}/`;
  let body: unknown;
  try {
    const res = await fetch(root, { signal, headers: { accept: 'application/json' } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    body = await res.json();
  } catch (e) {
    throw new Error(`the Octavia endpoint ${root} did not give its version document: ${(e as Error).message}`);
  }
  const ids = ((body as { versions?: Array<{ id?: unknown }> }).versions ?? []).map((v) => String(v.id)).filter((id) => /^v\d+\.\d+$/.test(id));
  if (!ids.length) throw new Error(`the answer of ${root} lists no API version (is it an Octavia endpoint?)`);
  const newest = ids.sort((a, b) => apiOrder(b) - apiOrder(a))[0]!;
  return judge(advisory, releasesServing(newest), `endpoint ${root} (newest API ${newest})`, `the Octavia at ${root}`);
}

const apiOrder = (id: string) => {
  const [major, minor] = id.slice(1).split('.').map(Number);
  return major! * 1000 + minor!;
};
