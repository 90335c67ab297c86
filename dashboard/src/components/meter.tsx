/**
 * How much of a limit is used, as a bar and as words ("3 / 10", "3 / unlimited"); the bar turns
 * amber from 80 % and red at the limit. A quota's −1 (unlimited) is `limit: null`.
 */
const WARN_FROM = 0.8;

export function Meter({ label, used, limit, unit = '' }: { label: string; used: number; limit: number | null; unit?: string }) {
  const share = limit === null ? 0 : limit === 0 ? (used > 0 ? 1 : 0) : Math.min(used / limit, 1);
  const tone = limit === null ? 'none' : used >= limit ? 'full' : share >= WARN_FROM ? 'high' : 'ok';
  const text = `${used}${unit} / ${limit === null ? 'unlimited' : `${limit}${unit}`}`;
  return (
    <div class="meter">
      <div class="meter-head">
        <span class="meter-label">{label}</span>
        <span class="meter-text">{text}</span>
      </div>
      <div
        class="meter-track"
        role="meter"
        aria-label={`${label} in use`}
        aria-valuemin={0}
        aria-valuemax={limit ?? used}
        aria-valuenow={used}
        aria-valuetext={limit === null ? `${used}${unit} used, unlimited` : `${used}${unit} of ${limit}${unit} used`}
      >
        <span class={`meter-fill meter-${tone}`} style={{ width: `${share * 100}%` }} />
      </div>
    </div>
  );
}
