/**
 * L7 policy and rule rules, free of I/O so the API, providers and config renderers share
 * them: how a policy's action and redirect fields are made consistent, where a policy lands
 * in its listener's ordered list, and what each rule type accepts. Wording is Octavia's.
 */
import { apiError } from '../errors.js';
import { L7PolicyDefaults } from '../defaults.js';
import type { L7PolicyAction, L7RuleCompareType, L7RuleType } from '../enums.js';
import { MaxInt32 } from '../grammar/limits.js';
import { regexProblem } from '../grammar/pcre-regex.js';
import { isPrintable } from '../grammar/printable.js';

/** The part of a policy that decides what it does with a matching request. */
export type L7PolicyTarget = {
  action: L7PolicyAction;
  redirect_pool_id: string | null;
  redirect_url: string | null;
  redirect_prefix: string | null;
  redirect_http_code: number | null;
};

/** The same fields as a request carries them: absent = not given, null = cleared. */
export type L7PolicyTargetRequest = { [K in keyof L7PolicyTarget]?: L7PolicyTarget[K] | null };

const invalidArgs = (msg: string) => apiError('L7POLICY_INVALID_ARGS', msg);

// Control characters and spaces would end up verbatim in proxy configs (Octavia refuses them too).
const URL_FORBIDDEN_CHARS = /[\x00-\x20\x7f-\x9f]/;
const HTTP_URL = /^https?:\/\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:%]*@)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::(?<port>\d*))?(?:[/?#].*)?$/i;
const MAX_PORT = 65535;

/** Octavia's URLType: an http(s) URL with a host, and a port a socket could have. */
export function isRedirectUrl(value: string): boolean {
  const url = URL_FORBIDDEN_CHARS.test(value) || !isPrintable(value) ? null : HTTP_URL.exec(value);
  const port = url?.groups?.port;
  return url !== null && (!port || Number(port) <= MAX_PORT);
}

function checkRedirectUrl(field: string, value: string | null | undefined): void {
  if (value !== null && value !== undefined && !isRedirectUrl(value))
    throw apiError('INVALID_INPUT', field, value, 'Value must be a valid URL string');
}

/**
 * Octavia's sanitize_l7policy_api_args: the action demands its target, a target implies its
 * action (a pool wins over nothing, a URL or prefix sets a 302 default), and the other
 * targets are cleared. Returns the request's fields made consistent; absent stays absent.
 */
export function sanitizeL7PolicyTarget(req: L7PolicyTargetRequest): L7PolicyTargetRequest {
  checkRedirectUrl('redirect_url', req.redirect_url);
  checkRedirectUrl('redirect_prefix', req.redirect_prefix);
  const p: L7PolicyTargetRequest = Object.fromEntries(Object.entries(req).filter(([, v]) => v !== undefined));
  switch (p.action) {
    case undefined:
    case null:
      break;
    case 'REJECT':
      Object.assign(p, { redirect_url: null, redirect_pool_id: null });
      break;
    case 'REDIRECT_TO_URL':
      if (!p.redirect_url) throw invalidArgs('redirect_url must not be None');
      p.redirect_pool_id = null;
      break;
    case 'REDIRECT_TO_POOL':
      if (!p.redirect_pool_id) throw invalidArgs('redirect_pool_id or redirect_pool must not be None');
      p.redirect_url = null;
      break;
    case 'REDIRECT_PREFIX':
      if (!p.redirect_prefix) throw invalidArgs('redirect_prefix must not be None');
      break;
  }
  if (p.redirect_pool_id && (p.redirect_url || p.redirect_prefix))
    throw invalidArgs('Cannot specify redirect_pool_id and redirect_url or redirect_prefix at the same time');
  if (p.redirect_pool_id) Object.assign(p, { action: 'REDIRECT_TO_POOL', redirect_url: null, redirect_prefix: null, redirect_http_code: null });
  if (p.redirect_url) Object.assign(p, { action: 'REDIRECT_TO_URL', redirect_pool_id: null, redirect_prefix: null, redirect_http_code: p.redirect_http_code || L7PolicyDefaults.redirect_http_code });
  if (p.redirect_prefix) Object.assign(p, { action: 'REDIRECT_PREFIX', redirect_pool_id: null, redirect_url: null, redirect_http_code: p.redirect_http_code || L7PolicyDefaults.redirect_http_code });
  return p;
}

/** Clears the redirect fields the action does not use (a pool redirect has no HTTP code). */
export function clearUnusedTargets(t: L7PolicyTarget): L7PolicyTarget {
  switch (t.action) {
    case 'REJECT':
      return { action: t.action, redirect_pool_id: null, redirect_url: null, redirect_prefix: null, redirect_http_code: null };
    case 'REDIRECT_TO_URL':
      return { ...t, redirect_pool_id: null, redirect_prefix: null };
    case 'REDIRECT_TO_POOL':
      return { ...t, redirect_url: null, redirect_prefix: null, redirect_http_code: null };
    case 'REDIRECT_PREFIX':
      return { ...t, redirect_pool_id: null, redirect_url: null };
  }
}

const NO_TARGET: Omit<L7PolicyTarget, 'action'> = { redirect_pool_id: null, redirect_url: null, redirect_prefix: null, redirect_http_code: null };

/** The target of a new policy. */
export function resolveL7PolicyTargetCreate(req: L7PolicyTargetRequest & { action: L7PolicyAction }): L7PolicyTarget {
  const s = sanitizeL7PolicyTarget(req);
  return clearUnusedTargets({ ...NO_TARGET, ...s, action: s.action ?? req.action });
}

/** The field each redirecting action sends to. */
const TARGET_OF: Readonly<Record<L7PolicyAction, 'redirect_url' | 'redirect_prefix' | 'redirect_pool_id' | null>> = {
  REJECT: null,
  REDIRECT_TO_URL: 'redirect_url',
  REDIRECT_PREFIX: 'redirect_prefix',
  REDIRECT_TO_POOL: 'redirect_pool_id',
};

/**
 * The target after an update. As in Octavia, the patch is sanitized on its own (a new action
 * must come with its target) and an update that sets nothing at all is refused; the result
 * is laid over the stored policy.
 */
export function resolveL7PolicyTargetUpdate(stored: L7PolicyTarget, patch: L7PolicyTargetRequest & Record<string, unknown>): L7PolicyTarget {
  if (!Object.values(patch).some((v) => v !== undefined)) throw invalidArgs('Invalid update options');
  const { action, redirect_pool_id, redirect_url, redirect_prefix, redirect_http_code } = patch;
  const s = sanitizeL7PolicyTarget({ action, redirect_pool_id, redirect_url, redirect_prefix, redirect_http_code });
  const merged = clearUnusedTargets({ ...stored, ...s, action: s.action ?? stored.action });
  // Beyond Octavia: clearing the target of the stored action (`redirect_url: null` alone) would leave a redirect to nowhere.
  const target = TARGET_OF[merged.action];
  if (target && !merged[target]) throw invalidArgs(`${target} must not be None`);
  return merged;
}


/**
 * Where policy `id` goes in its listener's list (ids in position order): at `position`
 * (1-based), or last when the position is absent or beyond the end. The result's index+1
 * is each policy's new position, so positions are always 1..n.
 */
export function placePolicy(orderedIds: readonly string[], id: string, position: number | undefined): string[] {
  const rest = orderedIds.filter((x) => x !== id);
  const at = position === undefined ? rest.length : Math.min(position - 1, rest.length);
  return [...rest.slice(0, at), id, ...rest.slice(at)];
}

// ---------------------------------------------------------------------------------------
// L7 rules

/** A rule's matching fields; type and value may be null in a merged update until validated. */
export type L7RuleAttrs = {
  type: L7RuleType | null;
  compare_type: L7RuleCompareType;
  key: string | null;
  value: string | null;
};

// RFC 7230 token: what a header or cookie name may contain.
const HTTP_TOKEN = /^[a-zA-Z0-9!#$%&'*+\-.^_`|~]+$/;
// RFC 6265 cookie-octets (plus a few Octavia allows).
const COOKIE_VALUE = /^[a-zA-Z0-9!#$%&'()*+\-./:<=>?@[\]^_`{|}~]+$/;
// RFC 7230 field-value, bare or double-quoted (quoted values may contain spaces and tabs).
const HEADER_VALUE = /^[a-zA-Z0-9!"#$%&'()*+,\-./:;<=>?@[\]^_`{|}~\\]+$/;
const QUOTED_HEADER_VALUE = /^"[a-zA-Z0-9 \t!"#$%&'()*+,\-./:;<=>?@[\]^_`{|}~\\]*"$/;
const DN_FIELD = /^[a-zA-Z][A-Za-z0-9-]*$/;

const VALUE_COMPARES: readonly string[] = ['STARTS_WITH', 'ENDS_WITH', 'CONTAINS', 'EQUAL_TO'];

class RuleError extends Error {}
const invalidRule = (msg: string) => new RuleError(`Invalid L7 Rule: ${msg}`);
const invalidChars = (what: string) => new RuleError(`Invalid characters in ${what}`);
/**
 * Octavia compiles rule regexes with Python's `re`; HAProxy then compiles them with PCRE2. The
 * API accepts the subset of grammar/pcre-regex.ts, which PCRE2 and JavaScript both compile, so
 * some patterns Python accepts (`(?P<name>…)`, lookbehind, `[[:alpha:]]`) are refused here.
 */
function checkRegex(value: string): void {
  const problem = regexProblem(value);
  if (problem) throw new RuleError(`Unable to parse regular expression: value has ${problem}`);
}

function checkHeaderValue(value: string, what: string): void {
  if (!HEADER_VALUE.test(value) && !QUOTED_HEADER_VALUE.test(value)) throw invalidChars(what);
}

function checkKeyedRule(rule: L7RuleAttrs, value: string, checkValue: (v: string) => void): void {
  if (!rule.key) throw invalidRule('L7 rule type requires a key');
  if (!HTTP_TOKEN.test(rule.key)) throw invalidChars('key');
  if (rule.compare_type === 'REGEX') checkRegex(value);
  else if (VALUE_COMPARES.includes(rule.compare_type)) checkValue(value);
  else throw invalidRule('invalid comparison type for rule type');
}

/** The SSL_* rule types: Octavia reports only the last problem found, and so do we. */
function sslRuleProblem(rule: L7RuleAttrs, value: string): string | null {
  const { type, key, compare_type } = rule;
  const equalOnly = `L7rule type ${type} only supports the EQUAL_TO compare type.`;
  switch (type) {
    case 'SSL_CONN_HAS_CERT':
      if (key) return `L7rule type ${type} does not use the "key" field.`;
      if (value.toLowerCase() !== 'true') return `L7rule value ${value} is not a boolean True string.`;
      return compare_type !== 'EQUAL_TO' ? equalOnly : null;
    case 'SSL_VERIFY_RESULT':
      if (key) return `L7rule type ${type} does not use the "key" field.`;
      if (!/^\d+$/.test(value)) return `L7rule type ${type} needs a int value, which is >= 0`;
      // Beyond Octavia: an X.509 verify result is a C int.
      if (Number(value) > MaxInt32) return `L7rule type ${type} needs a value <= ${MaxInt32}`;
      return compare_type !== 'EQUAL_TO' ? equalOnly : null;
    default:
      if (compare_type === 'REGEX') checkRegex(value);
      if (!key) return `L7rule type ${type} needs to specify a key and a value.`;
      return DN_FIELD.test(key) ? null : 'Invalid L7rule distinguished name field.';
  }
}

function checkRule(rule: L7RuleAttrs): void {
  const value = rule.value;
  if (!value) throw invalidRule('L7 rule type requires a value');
  switch (rule.type) {
    case 'HEADER':
      return checkKeyedRule(rule, value, (v) => checkHeaderValue(v, 'header value'));
    case 'COOKIE':
      return checkKeyedRule(rule, value, (v) => {
        if (!COOKIE_VALUE.test(v)) throw invalidChars('cookie value');
      });
    case 'HOST_NAME':
    case 'PATH':
      if (rule.compare_type === 'REGEX') return checkRegex(value);
      if (VALUE_COMPARES.includes(rule.compare_type)) return checkHeaderValue(value, 'comparison value');
      throw invalidRule('invalid comparison type for rule type');
    case 'FILE_TYPE':
      if (rule.compare_type === 'REGEX') return checkRegex(value);
      if (rule.compare_type === 'EQUAL_TO') return checkHeaderValue(value, 'comparison value');
      throw invalidRule('invalid comparison type for rule type');
    case 'SSL_CONN_HAS_CERT':
    case 'SSL_VERIFY_RESULT':
    case 'SSL_DN_FIELD': {
      const problem = sslRuleProblem(rule, value);
      if (problem) throw invalidRule(problem);
      return;
    }
    default:
      throw invalidRule('invalid rule type');
  }
}

/** Refuses an inconsistent rule with 400 `Error parsing L7Rule: …`. */
export function validateL7Rule<T extends L7RuleAttrs>(rule: T): asserts rule is T & { type: L7RuleType; value: string } {
  try {
    // Octavia refuses only CR/LF; any control character would corrupt the proxy config line.
    if (!isPrintable(rule.value ?? '')) throw invalidChars('value');
    if (!isPrintable(rule.key ?? '')) throw invalidChars('key');
    checkRule(rule);
  } catch (e) {
    if (e instanceof RuleError) throw apiError('L7RULE_INVALID', e.message);
    throw e;
  }
}

/** A policy holds at most this many rules (HAProxy stops parsing beyond ~53). */
export function checkRuleCount(policyId: string, count: number): void {
  if (count > L7PolicyDefaults.maxRulesPerPolicy) throw apiError('L7RULE_TOO_MANY', policyId);
}
