/**
 * Compute driver `local`: each amphora is its agent's process group (../process-compute.ts) run as
 * the controller's own user, in the controller's network stack, with nothing around it: nothing
 * to prepare or remove, and its processes are those working in its directory.
 */
import { ProcessCompute, type Command, type ProcessComputeOptions } from '../process-compute.js';
import { groupsWorkingIn, type GroupRecord } from '../process-group.js';

export type LocalComputeOptions = ProcessComputeOptions;

export class LocalCompute extends ProcessCompute {
  constructor(rootDir: string, opts: LocalComputeOptions = {}) {
    super('local', rootDir, opts);
  }

  protected async prepare(): Promise<void> {}

  protected wrap(agent: Command): Command {
    return agent;
  }

  protected async groupsOf(_amphoraId: string, dir: string): Promise<GroupRecord[]> {
    return groupsWorkingIn(dir);
  }

  protected async teardown(): Promise<void> {}
}
