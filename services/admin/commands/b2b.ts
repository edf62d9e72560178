// `b2b`: company locations and customers, item commands of the B2B kinds (../kinds.ts).
import type { Command } from 'commander';
import { B2B_KINDS } from '../kinds.ts';
import { addItemCommands } from './items.ts';

export function registerB2b(program: Command): void {
  const b2b = program
    .command('b2b')
    .description('B2B: company locations (catalog, price list) and customers (companies)');
  for (const spec of B2B_KINDS) addItemCommands(b2b, spec);
}
