/**
 * `ostia <command>`: dispatches to one subcommand and turns any failure into one line on
 * stderr (what failed, then what to do) and a non-zero exit code.
 */
import { groupHelpText, helpText, writeLine, type Command, type CommandGroup } from './command.js';
import { runCommand, runGroup } from './run.js';
import { up } from './up.js';
import { api } from './api.js';
import { worker } from './worker.js';
import { health } from './health.js';
import { housekeeping } from './housekeeping.js';
import { trace } from './trace.js';
import { certs } from './certs.js';
import { audit } from './audit.js';
import { doctor } from './doctor.js';
import { advise } from './advise.js';
import { plan } from './plan.js';
import { config } from './config.js';
import { agent } from './agent.js';
import { server } from './server.js';
import { baseline } from './baseline.js';
import { migrate } from './migrate.js';

const commands: readonly (Command | CommandGroup)[] = [up, api, worker, health, housekeeping, trace, migrate, certs, audit, doctor, advise, plan, baseline, config, server, agent];
const isGroup = (c: Command | CommandGroup): c is CommandGroup => 'commands' in c;

function overview(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'Usage: ostia <command> [options]',
    '',
    'Ostia: load balancing as a service, speaking OpenStack Octavia v2.',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    "Run 'ostia <command> --help' for a command's options.",
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(overview());
    return 2;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const about = commands.find((c) => c.name === rest[0]);
    process.stdout.write(about ? (isGroup(about) ? groupHelpText(about) : helpText(about)) : overview());
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    writeLine(process.stderr, `ostia: unknown command '${name}'. Run 'ostia --help' for the list.`);
    return 2;
  }
  return isGroup(command) ? runGroup(command, rest) : runCommand(command, rest);
}

process.exitCode = await main(process.argv.slice(2));
