/**
 * Property-based: hostile strings and numbers in every value of a load balancer that comes
 * from outside the renderer. Whatever the value, the renderer either refuses it (RenderError)
 * or writes exactly the directives the model implies: the same lines with the same first
 * keyword and the same number of words as with a benign value, every line parseable, and a
 * value placed as text decodes back (through HAProxy's quoting) to exactly that text.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { AmphoraConfig } from '../../domain/amphora-config.js';
import { RenderError } from './encoders.js';
import { renderHaproxyConfig, type HaproxyPaths } from './render.js';
import * as fx from '../../../test/support/render-fixtures.js';
import { fetchArgument, parseConfig } from '../../../test/support/haproxy-words.js';

const RUNS = Number(process.env.OSTIA_FUZZ_RUNS ?? 300);
const MARKER = 'MARKER';

const KEYWORDS = new Set([
  'global', 'defaults', 'frontend', 'backend', 'maxconn', 'stats', 'server-state-file', 'pidfile', 'hard-stop-after', 'httpclient.ssl.verify',
  'load-server-state-from-file', 'retries', 'option', 'mode', 'bind', 'timeout', 'tcp-request', 'acl', 'http-request',
  'use_backend', 'default_backend', 'balance', 'hash-type', 'stick-table', 'stick', 'cookie', 'http-check', 'server', 'http-response',
]);

const hostileUnit = fc.constantFrom(
  '\n', '\r', '\r\n', '\t', '\0', '\x7f', '\u0085', '\u2028', '\ud800', '#', ' ', '"', "'", '\\', '{', '}', '(', ')', ',', '|', '!',
  '%', '%[src]', '%{+Q}o', '$', '$HOME', '${X}', '-i', '--', 'if', 'é', '💥', 'a', 'Z', '0', '9', '/', ':', '.', '=', '*', '~', '-', '_',
);
const hostileString = fc.oneof(
  fc.array(hostileUnit, { maxLength: 14 }).map((units) => units.join('')),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom(
    'x\n    server evil 6.6.6.6:80',
    'x\r\nuse_backend evil',
    '"; http-request deny',
    'a b c',
    '-m reg .*',
    'x if TRUE',
    "it's",
    '\\"',
    '%[req.hdr(cookie)]',
    '${HOME}',
    '} || { always_true',
    '/ok HTTP/1.1\r\nHost: evil',
  ),
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(NaN, Infinity, -Infinity, -0, -1, 0, 1, 2, 256, 257, 65535, 65536, 2 ** 31, 2 ** 53, 1.5, 1.1, 1.0),
);

/** How a text value is expected to appear in the word that holds it. */
type Placement = 'word' | 'logFormat' | 'quotable' | 'fetchArgument';

interface TextField {
  readonly name: string;
  /** Renders the load balancer with `value` in this field (inside the template, when placed). */
  readonly render: (value: string) => string;
  /** The same load balancer with a value the field accepts. */
  readonly benign: () => string;
  /** Where the value lands as text: its template (holding MARKER) and how it is encoded there. */
  readonly placed?: { readonly template: string; readonly as: Placement };
  /** A hostile value may remove lines (a reference to nothing, a header switched off). */
  readonly mayRemove?: boolean;
}

type FieldOptions = Pick<TextField, 'placed' | 'mayRemove'>;

const paths = fx.goldenPaths(fx.ids.amphora(1));
const unchanged = () => {};
const renderWith = (base: () => AmphoraConfig, change: (c: AmphoraConfig) => void, p: HaproxyPaths = paths, maxconn = fx.goldenOptions.maxconn) => {
  const config = base();
  change(config);
  return renderHaproxyConfig(config, p, { maxconn });
};

const fill = (options: FieldOptions, value: string) => (options.placed ? options.placed.template.split(MARKER).join(value) : value);

function fieldFromRender(name: string, renderRaw: (raw: string) => string, original: () => string, options: FieldOptions = {}): TextField {
  return { name, render: (v) => renderRaw(fill(options, v)), benign: () => (options.placed ? renderRaw(fill(options, MARKER)) : original()), ...options };
}

function textField(name: string, base: () => AmphoraConfig, set: (c: AmphoraConfig, v: string) => void, options: FieldOptions = {}): TextField {
  return fieldFromRender(name, (raw) => renderWith(base, (c) => set(c, raw)), () => renderWith(base, unchanged), options);
}

const placed = (template: string, as: Placement): FieldOptions => ({ placed: { template, as } });
const mayRemove: FieldOptions = { mayRemove: true };

const l7 = fx.httpWithL7;
const https = fx.terminatedHttps;
const HTTPS_CIPHERS = 'ECDHE-ECDSA-AES256-GCM-SHA384:TLS_AES_256_GCM_SHA384';
const policyOf = (c: AmphoraConfig, n: number) => c.listeners[0]!.l7policies[n - 1]!;
const ruleOf = (c: AmphoraConfig, n: number) => c.listeners[0]!.l7policies.flatMap((p) => p.rules).find((r) => r.id === fx.ids.rule(n))!;
const pathField = (name: string, key: keyof HaproxyPaths) =>
  fieldFromRender(name, (raw) => renderWith(l7, unchanged, { ...paths, [key]: raw }), () => renderWith(l7, unchanged), placed(`/run/${MARKER} x/${key}`, 'word'));

const TEXT_FIELDS: readonly TextField[] = [
  textField('l7rule REGEX value', l7, (c, v) => (ruleOf(c, 1).value = v), placed(MARKER, 'word')),
  textField('l7rule COOKIE key', l7, (c, v) => (ruleOf(c, 2).key = v), placed(MARKER, 'fetchArgument')),
  textField('l7rule COOKIE value', l7, (c, v) => (ruleOf(c, 2).value = v), placed(MARKER, 'word')),
  textField('l7rule HOST_NAME value', l7, (c, v) => (ruleOf(c, 3).value = v), placed(MARKER, 'quotable')),
  textField('l7rule PATH value', l7, (c, v) => (ruleOf(c, 4).value = v), placed(MARKER, 'quotable')),
  textField('l7rule HEADER key', l7, (c, v) => (ruleOf(c, 5).key = v), placed(MARKER, 'fetchArgument')),
  textField('l7rule HEADER value', l7, (c, v) => (ruleOf(c, 5).value = v), placed(MARKER, 'quotable')),
  textField('l7rule FILE_TYPE value', l7, (c, v) => (ruleOf(c, 6).value = v), placed(MARKER, 'quotable')),
  textField('l7rule SSL_DN_FIELD key', l7, (c, v) => (ruleOf(c, 7).key = v), placed(MARKER, 'fetchArgument')),
  textField('l7rule SSL_DN_FIELD value', l7, (c, v) => (ruleOf(c, 7).value = v), placed(MARKER, 'word')),
  textField('l7rule SSL_VERIFY_RESULT value', l7, (c, v) => (ruleOf(c, 8).value = v)),
  textField('l7rule SSL_CONN_HAS_CERT value', l7, (c, v) => (ruleOf(c, 9).value = v)),
  textField('l7rule id', l7, (c, v) => (ruleOf(c, 4).id = v)),
  textField('l7policy redirect_url', l7, (c, v) => (policyOf(c, 2).redirectUrl = v), placed(`https://${MARKER}.example/`, 'logFormat')),
  textField('l7policy redirect_prefix', l7, (c, v) => (policyOf(c, 4).redirectPrefix = v), placed(`https://${MARKER}.example`, 'logFormat')),
  textField('l7policy redirect_pool_id', l7, (c, v) => (policyOf(c, 1).redirectPoolId = v), mayRemove),
  textField('listener default_pool_id', l7, (c, v) => (c.listeners[0]!.defaultPoolId = v), mayRemove),
  textField('listener insert_headers key', l7, (c, v) => (c.listeners[0]!.insertHeaders = { [v]: 'true' }), mayRemove),
  textField('listener insert_headers value', l7, (c, v) => (c.listeners[0]!.insertHeaders = { 'X-Forwarded-For': v }), mayRemove),
  textField('listener id', l7, (c, v) => (c.listeners[0]!.id = v)),
  textField('pool id', l7, (c, v) => (c.pools[1]!.id = v), mayRemove),
  textField('member id', l7, (c, v) => (c.pools[0]!.members[0]!.id = v)),
  textField('member address', l7, (c, v) => (c.pools[0]!.members[0]!.address = v)),
  textField('member monitor_address', fx.memberVariety, (c, v) => (c.pools[0]!.members[3]!.monitorAddress = v)),
  textField('pool cookie_name', l7, (c, v) => (c.pools[1]!.sessionPersistence = { type: 'APP_COOKIE', cookieName: v }), placed(MARKER, 'fetchArgument')),
  textField('healthmonitor url_path', l7, (c, v) => (c.pools[0]!.monitor!.urlPath = v), placed(`/${MARKER}`, 'word')),
  textField('healthmonitor domain_name', l7, (c, v) => (c.pools[0]!.monitor!.domainName = v), placed(`${MARKER}.example`, 'word')),
  textField('healthmonitor expected_codes', l7, (c, v) => (c.pools[0]!.monitor!.expectedCodes = v)),
  textField('healthmonitor http_method', l7, (c, v) => (c.pools[0]!.monitor!.httpMethod = v)),
  textField('vip address', l7, (c, v) => (c.vip.address = v), mayRemove),
  textField('additional vip address', l7, (c, v) => (c.vip.additional = [v]), mayRemove),
  textField('allowed_cidrs entry', fx.tcpWithSourceIp, (c, v) => (c.listeners[0]!.allowedCidrs = [v, '10.0.0.0/8']), mayRemove),
  textField('l7policy action', l7, (c, v) => (policyOf(c, 3).action = v as never)),
  textField('l7rule type', l7, (c, v) => (ruleOf(c, 4).type = v as never)),
  textField('l7rule compare_type', l7, (c, v) => (ruleOf(c, 7).compareType = v as never)),
  textField('healthmonitor type', l7, (c, v) => (c.pools[0]!.monitor!.type = v as never)),
  textField('session_persistence type', l7, (c, v) => (c.pools[0]!.sessionPersistence!.type = v as never)),
  textField('pool lb_algorithm', l7, (c, v) => (c.pools[0]!.algorithm = v as never)),
  textField('pool protocol', l7, (c, v) => (c.pools[0]!.protocol = v as never)),
  textField('listener protocol', l7, (c, v) => (c.listeners[0]!.protocol = v as never), mayRemove),
  textField('load balancer id', l7, (c, v) => (c.loadBalancerId = v)),
  textField('amphora id', l7, (c, v) => (c.amphoraId = v)),
  pathField('stats socket path', 'statsSocket'),
  pathField('state file path', 'stateFile'),
  pathField('pid file path', 'pidFile'),
  // Not placed: file names follow the directory in the same word.
  fieldFromRender('TLS directory path', (raw) => renderWith(https, unchanged, { ...paths, tlsDir: raw }), () => renderWith(https, unchanged)),
  // After both kinds of cipher, so an empty or hostile value changes no word count.
  textField('listener tls_ciphers', https, (c, v) => (c.listeners[0]!.tls!.ciphers = `${HTTPS_CIPHERS}:${v}`)),
  textField('listener tls_versions entry', https, (c, v) => (c.listeners[0]!.tls!.versions = [v as never])),
  textField('listener alpn_protocols entry', https, (c, v) => (c.listeners[0]!.tls!.alpn = ['h2', v as never])),
  textField('listener client_authentication', https, (c, v) => (c.listeners[0]!.tls!.clientAuthentication = v as never)),
  textField('pool tls_ciphers', https, (c, v) => (c.pools[0]!.tls!.ciphers = `${HTTPS_CIPHERS}:${v}`)),
  textField('pool alpn_protocols entry', https, (c, v) => (c.pools[0]!.tls!.alpn = [v as never])),
];

interface NumberField {
  readonly name: string;
  readonly render: (value: number) => string;
  /** A value that renders every optional line the field can bring. */
  readonly benign: number;
}

const numberField = (name: string, base: () => AmphoraConfig, set: (c: AmphoraConfig, v: number) => void, benign: number): NumberField => ({
  name,
  render: (v) => renderWith(base, (c) => set(c, v)),
  benign,
});

const NUMBER_FIELDS: readonly NumberField[] = [
  numberField('listener protocol_port', l7, (c, v) => (c.listeners[0]!.port = v), 80),
  numberField('listener connection_limit', l7, (c, v) => (c.listeners[0]!.connectionLimit = v), 100),
  numberField('listener timeout_client_data', l7, (c, v) => (c.listeners[0]!.timeouts.clientData = v), 1000),
  numberField('listener timeout_member_connect', l7, (c, v) => (c.listeners[0]!.timeouts.memberConnect = v), 1000),
  numberField('listener timeout_member_data', l7, (c, v) => (c.listeners[0]!.timeouts.memberData = v), 1000),
  numberField('listener timeout_tcp_inspect', l7, (c, v) => (c.listeners[0]!.timeouts.tcpInspect = v), 1000),
  numberField('member protocol_port', l7, (c, v) => (c.pools[0]!.members[0]!.port = v), 80),
  numberField('member weight', l7, (c, v) => (c.pools[0]!.members[0]!.weight = v), 1),
  numberField('member monitor_port', fx.memberVariety, (c, v) => (c.pools[0]!.members[3]!.monitorPort = v), 9000),
  numberField('healthmonitor delay', l7, (c, v) => (c.pools[0]!.monitor!.delay = v), 5),
  numberField('healthmonitor timeout', l7, (c, v) => (c.pools[0]!.monitor!.timeout = v), 3),
  numberField('healthmonitor max_retries', l7, (c, v) => (c.pools[0]!.monitor!.maxRetries = v), 3),
  numberField('healthmonitor max_retries_down', l7, (c, v) => (c.pools[0]!.monitor!.maxRetriesDown = v), 3),
  numberField('healthmonitor http_version', l7, (c, v) => (c.pools[0]!.monitor!.httpVersion = v), 1.1),
  numberField('l7policy redirect_http_code', l7, (c, v) => (policyOf(c, 2).redirectHttpCode = v), 302),
  numberField('l7policy position', l7, (c, v) => (policyOf(c, 3).position = v), 3),
  numberField('listener hsts_max_age', https, (c, v) => (c.listeners[0]!.tls!.hsts!.maxAge = v), 3600),
  { name: 'maxconn option', render: (v) => renderWith(l7, unchanged, paths, v), benign: 8000 },
];

/** Renders, or returns null when the renderer refused with a RenderError naming a field. */
function attempt(render: () => string): string | null {
  try {
    return render();
  } catch (e) {
    if (!(e instanceof RenderError)) throw e;
    assert.ok(e.field.length > 0);
    return null;
  }
}

function keywordCounts(lines: readonly string[][]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const words of lines) {
    assert.ok(KEYWORDS.has(words[0]!), `unexpected directive ${JSON.stringify(words)}`);
    counts.set(words[0]!, (counts.get(words[0]!) ?? 0) + 1);
  }
  return counts;
}

/** No directive more often than with the benign value (lines may only disappear). */
function assertNoExtraDirectives(hostile: readonly string[][], benign: readonly string[][]): void {
  const [h, b] = [keywordCounts(hostile), keywordCounts(benign)];
  for (const [keyword, n] of h) assert.ok(n <= (b.get(keyword) ?? 0), `${n} × ${keyword}, benign has ${b.get(keyword) ?? 0}`);
}

/** Line for line the same directives, each with as many words. */
function assertSameShape(hostile: readonly string[][], benign: readonly string[][]): void {
  keywordCounts(hostile);
  assert.equal(hostile.length, benign.length, 'line count');
  hostile.forEach((words, i) => {
    assert.equal(words[0], benign[i]![0], `line ${i} keyword`);
    assert.equal(words.length, benign[i]!.length, `line ${i} word count: ${JSON.stringify(words)}`);
  });
}

function expectedWord(benignWord: string, raw: string, whole: string, as: Placement): string {
  switch (as) {
    case 'word':
      return benignWord.split(MARKER).join(raw);
    case 'logFormat':
      return benignWord.split(MARKER).join(raw.replace(/%/g, '%%'));
    case 'quotable':
      return /^"([^"]*)"$/.exec(whole)?.[1] ?? whole;
    case 'fetchArgument':
      return whole;
  }
}

/** Every word that held MARKER holds the value now, decoded exactly; every other word is unchanged. */
function assertPlacedExactly(hostile: readonly string[][], benign: readonly string[][], raw: string, options: FieldOptions & { placed: NonNullable<FieldOptions['placed']> }): void {
  let placements = 0;
  benign.forEach((words, i) =>
    words.forEach((benignWord, j) => {
      const got = hostile[i]![j]!;
      if (!benignWord.includes(MARKER)) return assert.equal(got, benignWord, `line ${i} word ${j}`);
      placements++;
      const { as } = options.placed;
      assert.equal(as === 'fetchArgument' ? fetchArgument(got).argument : got, expectedWord(benignWord, raw, fill(options, raw), as));
    }),
  );
  assert.ok(placements > 0, 'the benign value was placed somewhere');
}

for (const field of TEXT_FIELDS) {
  test(`hostile text in ${field.name}: refused, or exactly the benign directives`, () => {
    const benignText = field.benign();
    const benign = parseConfig(benignText);
    fc.assert(
      fc.property(hostileString, (value) => {
        const cfg = attempt(() => field.render(value));
        if (cfg === null) return;
        const hostile = parseConfig(cfg);
        if (field.mayRemove) return assertNoExtraDirectives(hostile, benign);
        // Raw lines too: a smuggled comment or blank line would not show among the directives.
        assert.equal(cfg.split('\n').length, benignText.split('\n').length, 'raw line count');
        assertSameShape(hostile, benign);
        if (field.placed) assertPlacedExactly(hostile, benign, value, { ...field, placed: field.placed });
      }),
      { numRuns: RUNS },
    );
  });
}

for (const field of NUMBER_FIELDS) {
  test(`hostile number in ${field.name}: refused, or no directive added`, () => {
    const benign = parseConfig(field.render(field.benign));
    fc.assert(
      fc.property(hostileNumber, (value) => {
        const cfg = attempt(() => field.render(value));
        if (cfg !== null) assertNoExtraDirectives(parseConfig(cfg), benign);
      }),
      { numRuns: RUNS },
    );
  });
}
