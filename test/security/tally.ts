/**
 * Counts of the security regression suite: attempts per area and what became of each, printed
 * as one line at the end of `test/security.test.ts` so a CI log shows the suite's reach at a glance.
 */
export class Tally {
  private readonly areas = new Map<string, Map<string, number>>();

  /** One attempt in `area` ended in `outcome` (e.g. "refused 400", "rendered and passed haproxy -c"). */
  record(area: string, outcome: string, count = 1): void {
    const outcomes = this.areas.get(area) ?? new Map<string, number>();
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + count);
    this.areas.set(area, outcomes);
  }

  attempts(area: string): number {
    return [...(this.areas.get(area)?.values() ?? [])].reduce((a, b) => a + b, 0);
  }

  /** `security: injection 1,571 attempts (1,200 refused 400, 371 rendered); heartbeats …` */
  summary(): string {
    const n = (v: number) => v.toLocaleString('en-US');
    const parts = [...this.areas].map(([area, outcomes]) => {
      const detail = [...outcomes].map(([outcome, count]) => `${n(count)} ${outcome}`).join(', ');
      return `${area} ${n(this.attempts(area))} attempts (${detail})`;
    });
    return `security: ${parts.length ? parts.join('; ') : 'no attempts recorded'}`;
  }
}
