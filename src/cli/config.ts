/** `ostia config`: the configuration a process started with these flags would run with. */
import { stringify } from 'yaml';
import { testModes, type Config, type TestMode } from '../config.js';
import { printJson, type Command } from './command.js';
import { configFromFlags, databaseOption, dataDirOption, listenOptions, redactUrl } from './settings.js';

export const config: Command = {
  name: 'config',
  summary: 'Print the effective configuration (defaults, then the config file, then OSTIA_* variables, then flags), validated, secrets masked.',
  options: { ...dataDirOption, ...listenOptions, ...databaseOption },
  details: [
    'The YAML printed is a valid config file: copy it, trim it to what you change, and pass it with --config.',
    'An empty identity.tokenSecret means the serving roles use (or create) DATA_DIR/token-secret;',
    'an empty keyManager.encryptionKey, DATA_DIR/key-manager-key.',
    'Test modes (compute.driver noop, network.driver noop, identity.mode testing) are said as a comment above their section, or on stderr with --json.',
  ].join('\n'),
  async run(input) {
    const effective = maskSecrets(configFromFlags(config, input));
    const modes = testModes(effective);
    if (input.json) {
      printJson(effective);
      for (const mode of modes) process.stderr.write(`${mode.notice}\n`);
    } else process.stdout.write(withTestModeComments(stringify(effective), modes));
    return 0;
  },
};

/** The YAML stays a valid config file: each notice is a comment right above its section. */
function withTestModeComments(yaml: string, modes: readonly TestMode[]): string {
  return modes.reduce((out, { section, notice }) => out.replace(new RegExp(`^${section}:$`, 'm'), `# ${notice}\n${section}:`), yaml);
}

const SECRET_KEY = /password|secret|encryptionkey/i;

/** Every password and secret, at any depth, as `***` (empty ones stay empty: that is information). */
export function maskSecrets(cfg: Config): Config {
  const mask = (value: unknown, key: string): unknown => {
    // A list under a secret's name (keyManager.previousEncryptionKeys) is masked item by item.
    if (Array.isArray(value)) return value.map((v) => mask(v, SECRET_KEY.test(key) ? key : ''));
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v, k)]));
    return SECRET_KEY.test(key) && typeof value === 'string' && value !== '' ? '***' : value;
  };
  const masked = mask(cfg, '') as Config;
  return { ...masked, database: { ...masked.database, url: redactUrl(cfg.database.url) } };
}
