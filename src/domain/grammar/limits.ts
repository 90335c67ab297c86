/**
 * The integer ranges HAProxy 2.6 accepts for the values the API places in its config, measured
 * with `haproxy -c`. Where Octavia's API allows more, Ostia refuses the value with a 400 instead
 * of writing a config HAProxy would refuse.
 */

/** HAProxy's timers are signed 32-bit milliseconds: `timeout client 2147483648` is a "timer overflow". */
export const MaxTimerMs = 2 ** 31 - 1;

/** Octavia's limit for a listener's timeouts, in milliseconds (24 days), below MaxTimerMs. */
export const MaxListenerTimeoutMs = 2_073_600_000;

/** A health monitor's delay and timeout are seconds that become millisecond timers (`inter`, `timeout check`). */
export const MaxMonitorSeconds = Math.floor(MaxTimerMs / 1000);

/**
 * A signed 32-bit integer: the SQL column Octavia stores connection_limit and hsts_max_age in, the C
 * `int` of HAProxy's maxconn, and of the X.509 verify result an SSL_VERIFY_RESULT rule compares.
 */
export const MaxInt32 = 2 ** 31 - 1;
