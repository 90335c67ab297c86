import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as enc from './encoders.js';
import { RenderError } from './encoders.js';
import { fetchArgument, splitWords } from '../../../test/support/haproxy-words.js';

function refuses(fn: () => unknown, field: string): void {
  assert.throws(fn, (e: unknown) => e instanceof RenderError && e.field === field);
}

const CONTROL_CHARS = ['\n', '\r', '\r\n', '\t', '\0', '\x1b', '\x7f', '\u0085', '\u009f'];

test('word: bare when harmless, double-quoted with \\ " $ escaped otherwise; one word back', () => {
  assert.equal(enc.word('f', '/api/v1'), '/api/v1');
  assert.equal(enc.word('f', ''), '""');
  assert.equal(enc.word('f', 'a b'), '"a b"');
  assert.equal(enc.word('f', 'say "hi" $HOME \\ #x \'q\''), '"say \\"hi\\" \\$HOME \\\\ #x \'q\'"');
  for (const value of ['a b', '#', "'", '"', '\\', '${HOME}', '$X', '}', '{', '%[src]', 'é💥', 'a\\"b', '\\', ' ', '-i']) {
    assert.deepEqual(splitWords(`x ${enc.word('f', value)} y`), ['x', value, 'y'], value);
  }
});

test('word: refuses control characters and lone surrogates', () => {
  for (const c of CONTROL_CHARS) refuses(() => enc.word('the field', `a${c}b`), 'the field');
  refuses(() => enc.word('f', 'a\ud800b'), 'f');
  assert.equal(enc.word('f', 'a\u2028b'), '"a\u2028b"');
});

test('regex: compiled before it is placed', () => {
  assert.equal(enc.regex('f', '^/a b\\d+$'), '"^/a b\\\\d+\\$"');
  assert.deepEqual(splitWords(enc.regex('f', '^/a b\\d+$')), ['^/a b\\d+$']);
  refuses(() => enc.regex('rule value', '(unclosed'), 'rule value');
  refuses(() => enc.regex('rule value', 'a\nb'), 'rule value');
});

test('logFormatLiteral: every % doubled so no sample fetch can start', () => {
  assert.equal(enc.logFormatLiteral('f', 'http://x/%41?q=%[src]'), '"http://x/%%41?q=%%[src]"');
});

test('httpToken, dnField, domainName: their grammar only', () => {
  assert.equal(enc.httpToken('f', "X-My_Header.1'#$"), "X-My_Header.1'#$");
  for (const bad of ['', 'a b', 'a:b', 'a(b', 'a,b', 'a"b', 'é', 'a\nb']) refuses(() => enc.httpToken('key', bad), 'key');
  assert.equal(enc.dnField('f', 'CN'), 'CN');
  for (const bad of ['', '1CN', 'C N', 'C)']) refuses(() => enc.dnField('key', bad), 'key');
  assert.equal(enc.domainName('f', 'app.example.com.'), 'app.example.com.');
  for (const bad of ['', 'a b', 'a..b', 'a/b', 'a%b', 'x'.repeat(64), 'a\nb']) refuses(() => enc.domainName('domain_name', bad), 'domain_name');
});

test('fetchWithArgument: the argument survives both parsing levels', () => {
  for (const key of ['X-Token', "it's", 'a#b$c', 'q|~`^']) {
    const [decoded] = splitWords(enc.fetchWithArgument('f', 'req.hdr', key));
    assert.deepEqual(fetchArgument(decoded!), { fetch: 'req.hdr', argument: key });
  }
});

test('expectedCodes: rebuilt from the numbers', () => {
  assert.equal(enc.expectedCodes('f', '200'), '200');
  assert.equal(enc.expectedCodes('f', '200, 202 ,204'), '200,202,204');
  assert.equal(enc.expectedCodes('f', '200-204'), '200-204');
  assert.equal(enc.expectedCodes('f', '200,300-302'), '200,300-302');
  for (const bad of ['', '20', '2000', '200,', '204-200', '200\n,201', 'abc', '200 201', '%[x]']) refuses(() => enc.expectedCodes('expected_codes', bad), 'expected_codes');
});

test('ipAddress, socketAddress, hostAddress, cidr: parsed and written back canonically', () => {
  assert.equal(enc.ipAddress('f', '10.0.0.1'), '10.0.0.1');
  assert.equal(enc.ipAddress('f', '2001:DB8:0:0::1'), '2001:db8::1');
  assert.equal(enc.socketAddress('a', '2001:db8::1', 'p', 80), '[2001:db8::1]:80');
  assert.equal(enc.socketAddress('a', '10.0.0.1', 'p', 65535), '10.0.0.1:65535');
  assert.equal(enc.hostAddress('a', '::1'), '[::1]');
  for (const bad of ['', 'localhost', '10.0.0.1 ', '10.0.0.1\n', '010.0.0.1', 'fe80::1%eth0', '[::1]', '1.2.3.4:80', '::1#'])
    refuses(() => enc.ipAddress('address', bad), 'address');
  refuses(() => enc.socketAddress('a', '10.0.0.1', 'port', 0), 'port');
  refuses(() => enc.socketAddress('a', '10.0.0.1', 'port', 65536), 'port');
  assert.equal(enc.cidr('f', '192.168.1.77/24'), '192.168.1.0/24');
  assert.equal(enc.cidr('f', '2001:DB8::/32'), '2001:db8::/32');
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/8 10.0.0.0/8', '10.0.0.0/8\n', '10.0.0.0//8', '/8']) refuses(() => enc.cidr('allowed_cidrs', bad), 'allowed_cidrs');
});

test('uuid, integer, oneOf, absolutePath', () => {
  assert.equal(enc.uuid('f', '11111111-0000-4000-8000-000000000001'), '11111111-0000-4000-8000-000000000001');
  for (const bad of ['11111111-0000-4000-8000-00000000000A', '111111110000400080000000000000001', 'x', '11111111-0000-4000-8000-000000000001\n'])
    refuses(() => enc.uuid('id', bad), 'id');
  assert.equal(enc.integer('f', 5, 0, 10), '5');
  for (const bad of [NaN, Infinity, -1, 11, 1.5, 2 ** 60]) refuses(() => enc.integer('n', bad, 0, 10), 'n');
  assert.equal(enc.oneOf('f', 'GET', ['GET', 'HEAD']), 'GET');
  refuses(() => enc.oneOf('m', 'GET /x', ['GET', 'HEAD']), 'm');
  assert.equal(enc.absolutePath('f', '/var/lib/ostia/a b/hap.sock'), '"/var/lib/ostia/a b/hap.sock"');
  refuses(() => enc.absolutePath('socket', 'relative/hap.sock'), 'socket');
  refuses(() => enc.absolutePath('socket', '/tmp/x\nuser root'), 'socket');
});
