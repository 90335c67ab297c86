/**
 * Roles the architecture names but that have nothing to do yet: health and housekeeping work
 * on amphorae, which only the amphora provider (issue 3) creates. They fail loudly rather than
 * pretend to run.
 */
import { CliError, type Command } from './command.js';

function pendingRole(name: string, summary: string): Command {
  return {
    name,
    summary: `${summary} Not available until the amphora provider lands (issue 3).`,
    options: {},
    run: async () => {
      throw new CliError(
        'not available until the amphora provider lands (issue 3)',
        "The noop provider needs no such process: run 'ostia up', or 'ostia api' with 'ostia worker'.",
        2,
      );
    },
  };
}

export const health = pendingRole('health', 'Receive amphora heartbeats, derive operating status and trigger failovers.');
export const housekeeping = pendingRole('housekeeping', 'Reap orphans, keep the spare amphora pool and rotate agent certificates.');
