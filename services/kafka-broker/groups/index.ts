// Consumer-group coordinator: the factory the broker uses. See coordinator.ts for the semantics.
import type { LogStore } from '../storage/api.ts';
import type { GroupCoordinator } from './api.ts';
import { ClassicGroupCoordinator, type GroupCoordinatorOptions } from './coordinator.ts';
import type { Logger } from './offsets-log.ts';

export type * from './api.ts';
export { type Clock, systemClock, type TimerHandle } from './clock.ts';
export { ClassicGroupCoordinator, ErrorCode, type GroupCoordinatorOptions, type GroupState } from './coordinator.ts';
export type { Logger } from './offsets-log.ts';

/**
 * Opens the coordinator: creates the internal compacted topic `__consumer_offsets` if missing (1
 * partition, internal) and replays it to rebuild committed offsets and group metadata.
 * Extra optional settings (clock, initialRebalanceDelayMs, min/maxSessionTimeoutMs, ...) are documented
 * on GroupCoordinatorOptions.
 */
export async function createGroupCoordinator(
  opts: { log: LogStore; logger?: Logger } & Partial<Omit<GroupCoordinatorOptions, 'log' | 'logger'>>,
): Promise<GroupCoordinator> {
  const coordinator = new ClassicGroupCoordinator(opts);
  await coordinator.start();
  return coordinator;
}
