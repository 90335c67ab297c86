/**
 * `ostia <command>`: dispatches to one subcommand and turns any failure into one line on
 * stderr (what failed, then what to do) and a non-zero exit code.
 */
import { helpText, writeLine, type Command } from './command.js';
import { runCommand } from './run.js';
import { up } from './up.js';
import { api } from './api.js';
import { worker } from './worker.js';
import { health } from './health.js';
import { housekeeping } from './housekeeping.js';
import { trace } from './trace.js';
import { certs } from './certs.js';
import { config } from './config.js';
import { agent } from './agent.js';

const commands: readonly Command[] = [up, api, worker, health, housekeeping, trace, certs, config, agent];

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
    process.stdout.write(about ? helpText(about) : overview());
    return 0;
  }
  const command = commands.find((c) => c.name === name);
  if (!command) {
    writeLine(process.stderr, `ostia: unknown command '${name}'. Run 'ostia --help' for the list.`);
    return 2;
  }
  return runCommand(command, rest);
}

process.exitCode = await main(process.argv.slice(2));
