import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { orderDue, retryDelayMs } from './due.js';

const DAY = 86_400_000;
const issued = (from: number, days: number) => ({
  domains: ['www.example.com'], container_ref: 'ref-1', not_before: new Date(from).toISOString(), not_after: new Date(from + days * DAY).toISOString(),
  renew_requested: false, next_attempt_at: 0,
});
const listener = { acme_domains: ['www.example.com'], default_tls_container_ref: 'ref-1' };
const t0 = Date.parse('2026-01-01T00:00:00Z');

test('a listener without a certificate of its own orders one; a failure waits for its next attempt', () => {
  assert.equal(orderDue(listener, undefined, t0, 2 / 3), 'first certificate');
  assert.equal(orderDue(listener, { ...issued(t0, 90), container_ref: null, next_attempt_at: t0 + 1 }, t0, 2 / 3), null);
  assert.equal(orderDue(listener, { ...issued(t0, 90), container_ref: null, next_attempt_at: t0 }, t0, 2 / 3), 'first certificate');
});

test('renewal comes at the configured fraction of the lifetime, or when asked, or when the names change', () => {
  assert.equal(orderDue(listener, issued(t0, 90), t0 + 59 * DAY, 2 / 3), null);
  assert.equal(orderDue(listener, issued(t0, 90), t0 + 60 * DAY, 2 / 3), 'renewal due');
  assert.equal(orderDue(listener, { ...issued(t0, 90), renew_requested: true }, t0, 2 / 3), 'renewal requested');
  assert.equal(orderDue({ ...listener, acme_domains: ['www.example.com', 'api.example.com'] }, issued(t0, 90), t0, 2 / 3), 'names changed');
  assert.equal(orderDue({ ...listener, acme_domains: ['www.example.com'] }, { ...issued(t0, 90), domains: ['WWW.example.com'.toLowerCase()] }, t0, 2 / 3), null);
});

test('a certificate issued but not served (rolled back) is noticed', () => {
  assert.equal(orderDue({ ...listener, default_tls_container_ref: 'placeholder' }, issued(t0, 90), t0, 2 / 3), 'rolled back');
});

test('names compare as sets', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.domain(), { minLength: 1, maxLength: 5 }), (names) => {
      const shuffled = [...names].reverse();
      return orderDue({ acme_domains: shuffled, default_tls_container_ref: 'ref-1' }, { ...issued(t0, 90), domains: names }, t0, 2 / 3) === null;
    }),
  );
});

test('the retry delay doubles from the minimum up to the maximum', () => {
  assert.deepEqual([1, 2, 3, 4, 10, 1000].map((n) => retryDelayMs(n, 60, 3600) / 1000), [60, 120, 240, 480, 3600, 3600]);
});
