/** Runs one subcommand and turns any failure into one line on stderr (what failed, then what to do) and an exit code. */
import { ConfigError } from '../config.js';
import { CliError, groupHelpText, helpText, parseInput, writeLine, type Command, type CommandGroup } from './command.js';

/** `ostia GROUP COMMAND …`: the member command named, or the group's help. */
export async function runGroup(group: CommandGroup, argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    (name === undefined ? process.stderr : process.stdout).write(groupHelpText(group));
    return name === undefined ? 2 : 0;
  }
  const command = group.commands.find((c) => c.name === `${group.name} ${name}`);
  if (!command) {
    writeLine(process.stderr, `ostia ${group.name}: unknown command '${name}'. Run 'ostia ${group.name} --help' for the list.`);
    return 2;
  }
  return runCommand(command, rest);
}

export async function runCommand(command: Command, argv: string[]): Promise<number> {
  try {
    const input = parseInput(command, argv);
    if (!input) {
      process.stdout.write(helpText(command));
      return 0;
    }
    return await command.run(input);
  } catch (e) {
    return report(command, e);
  }
}

function report(command: Command, e: unknown): number {
  if (e instanceof CliError) {
    writeLine(process.stderr, `ostia ${command.name}: ${e.message}. ${e.hint}`);
    return e.exitCode;
  }
  const message = e instanceof Error ? e.message : String(e);
  if (causedByConfig(e)) {
    writeLine(process.stderr, `ostia ${command.name}: ${message.split('\n')[0]!.replace(/\.$/, '')}. Fix the configuration, then check it with 'ostia config'.`);
    return 1;
  }
  writeLine(process.stderr, `ostia ${command.name}: ${message.split('\n')[0]!.replace(/\.$/, '')}. This is a bug or an unforeseen condition: rerun with OSTIA_DEBUG=1 for the stack trace and report it.`);
  if (process.env.OSTIA_DEBUG) for (const line of (e instanceof Error ? (e.stack ?? '') : '').split('\n')) writeLine(process.stderr, line);
  return 1;
}

/** A setting found wrong only once a role used it (a driver's check at start) is the configuration's problem, not a bug. */
function causedByConfig(e: unknown): boolean {
  for (let cause = e; cause instanceof Error; cause = cause.cause) if (cause instanceof ConfigError) return true;
  return false;
}
