/**
 * The real key-manager client (Debian's python3-barbicanclient through `openstack secret …`
 * and `openstack acl …`) against a real `ostia up`: store a PKCS#12 bundle and PEM, read them
 * back, list, group them in a certificate container, share one by ACL, and the cross-project
 * refusals, with the CLI's exact words.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { startOstia, type OstiaProcess } from './support/ostia-process.js';
import { unmet } from './support/requirements.js';
import { OpenstackCli } from './support/openstack-cli.js';
import { madeOnce } from './support/made-once.js';

const DEMO = 'ostia-demo';
const ALT = 'ostia-alt';
const READER = 'ostia-reader';
type Obj = Record<string, unknown>;

const refused = (what: string) => new RegExp(`^Forbidden: ${what} attempt not allowed - please review your user/project privileges$`, 'm');

describe('openstack secret / acl against ostia up', { skip: unmet('openstack-cli') }, () => {
  let ostia: OstiaProcess;
  let cli: OpenstackCli;
  let dir: string;
  const file = (name: string) => join(dir, name);
  let p12: Buffer;
  let certPem: string;
  let keyPem: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ostia-barbican-cli-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', file('key.pem'), '-out', file('cert.pem'), '-days', '30', '-subj', '/CN=www.example.com'], { stdio: 'ignore' });
    execFileSync('openssl', ['pkcs12', '-export', '-inkey', file('key.pem'), '-in', file('cert.pem'), '-passout', 'pass:', '-out', file('bundle.p12')], { stdio: 'ignore' });
    p12 = readFileSync(file('bundle.p12'));
    certPem = readFileSync(file('cert.pem'), 'utf8').trim();
    keyPem = readFileSync(file('key.pem'), 'utf8').trim();
    ostia = await startOstia();
    cli = new OpenstackCli(ostia.cloudsYaml);
  });
  after(async () => {
    await ostia?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const show = (cloud: string, args: string[]) => cli.json<Obj>(cloud, args);
  /** Writes the payload to a file, as bytes: how the CLI returns a binary secret. */
  async function payloadFile(cloud: string, ref: string, name: string): Promise<Buffer> {
    await cli.ok(cloud, ['secret', 'get', ref, '--file', file(name), '--payload_content_type', 'application/octet-stream']);
    return readFileSync(file(name));
  }

  it('the installed client has the commands', async () => {
    const help = (await cli.ok(DEMO, ['secret', 'store', '--help'])).stdout;
    for (const option of ['--payload-content-type', '--payload-content-encoding', '--payload', '--name']) assert.ok(help.includes(option), option);
  });

  /** The three secrets as `secret store` printed them, and their references; made once, by whichever test asks first. */
  const secrets = madeOnce(async () => {
    const stored = await Promise.all([
      show(DEMO, ['secret', 'store', '--name', 'www-bundle', '--payload-content-type', 'application/octet-stream', '--payload-content-encoding', 'base64', '--payload', p12.toString('base64')]),
      show(DEMO, ['secret', 'store', '--name', 'www-cert', '--payload-content-type', 'text/plain', '--payload', certPem]),
      show(DEMO, ['secret', 'store', '--name', 'www-key', '--payload-content-type', 'text/plain', '--payload', keyPem]),
    ]);
    const [p12Ref, cert, key] = stored.map((s) => s['Secret href'] as string);
    return { stored, refs: { p12: p12Ref!, cert: cert!, key: key! } };
  });
  /** The certificate container of the PEM certificate and key, as `container create` printed it. */
  const container = madeOnce(async () => {
    const { refs } = await secrets();
    return show(DEMO, ['secret', 'container', 'create', '--name', 'www-tls', '--type', 'certificate', '--secret', `certificate=${refs.cert}`, '--secret', `private_key=${refs.key}`]);
  });

  it('stores a PKCS#12 bundle (octet-stream, base64) and a PEM certificate and key (text/plain)', async () => {
    const { stored, refs } = await secrets();
    for (const ref of Object.values(refs)) assert.match(ref, new RegExp(`^${ostia.url}/key-manager/v1/secrets/[0-9a-f-]{36}$`));
    assert.deepEqual(stored[0]!['Content types'], { default: 'application/octet-stream' });
  });

  it('gets metadata and payloads back, byte for byte', async () => {
    const { refs } = await secrets();
    const meta = await show(DEMO, ['secret', 'get', refs.p12]);
    assert.deepEqual([meta.Name, meta.Status, meta['Secret type']], ['www-bundle', 'ACTIVE', 'opaque']);
    assert.deepEqual(await payloadFile(DEMO, refs.p12, 'back.p12'), p12);
    assert.equal((await show(DEMO, ['secret', 'get', '--payload', refs.cert])).Payload, certPem);
    // The CLI asks for text/plain by default: a binary bundle is refused as Barbican refuses it.
    assert.match(await cli.fails(DEMO, ['secret', 'get', '--payload', refs.p12]), /^Not Acceptable: Secret payload retrieval issue seen - Wrong payload content-type\.$/m);
  });

  it('lists the project\'s secrets', async () => {
    const { refs } = await secrets();
    const listed = await cli.json<Obj[]>(DEMO, ['secret', 'list']);
    assert.deepEqual(listed.map((s) => s['Secret href']).sort(), Object.values(refs).sort());
    assert.deepEqual((await cli.json<Obj[]>(DEMO, ['secret', 'list', '--name', 'www-cert'])).map((s) => s.Name), ['www-cert']);
  });

  it('groups certificate and key in a certificate container', async () => {
    const { refs } = await secrets();
    const containerRef = (await container())['Container href'] as string;
    assert.match(containerRef, new RegExp(`^${ostia.url}/key-manager/v1/containers/[0-9a-f-]{36}$`));
    const listed = await cli.json<Obj[]>(DEMO, ['secret', 'container', 'list']);
    assert.deepEqual(listed.map((c) => [c['Container href'], c.Type]), [[containerRef, 'certificate']]);
    // `-f json` trips over the client's own datetime in `container get`; YAML does not.
    const got = parseYaml((await cli.ok(DEMO, ['secret', 'container', 'get', containerRef, '-f', 'yaml'])).stdout) as Obj;
    assert.deepEqual([got.Name, got.Type, got.Certificate, got['Private Key']], ['www-tls', 'certificate', refs.cert, refs.key]);
  });

  it('another project can neither get, read, list nor delete them', async () => {
    const { refs } = await secrets();
    const containerRef = (await container())['Container href'] as string;
    const [meta, payload, deletion, containerGet, listed] = await Promise.all([
      cli.fails(ALT, ['secret', 'get', refs.p12]),
      cli.fails(ALT, ['secret', 'get', refs.p12, '--file', file('stolen.p12'), '--payload_content_type', 'application/octet-stream']),
      cli.fails(ALT, ['secret', 'delete', refs.cert]),
      cli.fails(ALT, ['secret', 'container', 'get', containerRef, '-f', 'yaml']),
      cli.json<Obj[]>(ALT, ['secret', 'list']),
    ]);
    assert.match(meta, refused('Secret retrieval'));
    assert.match(payload, refused('Secret payload retrieval'));
    assert.match(deletion, refused('Secret deletion'));
    assert.match(containerGet, refused('Container retrieval'));
    assert.deepEqual(listed, []);
    assert.match(await cli.fails(READER, ['secret', 'list']), refused('Secret\\(s\\) retrieval'));
  });

  it("an ACL grant to the other project's user lets it read, and only read", async () => {
    const { refs } = await secrets();
    const altUser = (await show(ALT, ['token', 'issue'])).user_id as string;
    const granted = await cli.json<Obj[]>(DEMO, ['acl', 'user', 'add', '--user', altUser, refs.p12]);
    assert.deepEqual(granted.map((a) => [a['Operation Type'], a['Project Access'], a.Users]), [['read', true, [altUser]]]);
    assert.deepEqual((await cli.json<Obj[]>(DEMO, ['acl', 'get', refs.p12]))[0]!.Users, [altUser]);
    assert.deepEqual(await payloadFile(ALT, refs.p12, 'shared.p12'), p12);
    assert.equal((await show(ALT, ['secret', 'get', refs.p12])).Name, 'www-bundle');
    assert.match(await cli.fails(ALT, ['secret', 'delete', refs.p12]), refused('Secret deletion'));
    assert.match(await cli.fails(ALT, ['acl', 'get', refs.p12]), refused('SecretACL\\(s\\) retrieval'));
    assert.match(await cli.fails(ALT, ['secret', 'get', refs.cert]), refused('Secret retrieval'), 'the grant is for that secret only');
  });

  it('deletes a secret: gone for the client too', async () => {
    const { refs } = await secrets();
    await cli.ok(DEMO, ['secret', 'container', 'delete', (await container())['Container href'] as string]);
    await cli.ok(DEMO, ['secret', 'delete', refs.key]);
    assert.match(await cli.fails(DEMO, ['secret', 'get', refs.key]), /^Not Found: Secret not found\.$/m);
    assert.deepEqual((await cli.json<Obj[]>(DEMO, ['secret', 'list'])).length, 2);
  });
});
