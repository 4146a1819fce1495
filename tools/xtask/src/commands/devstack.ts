import { writeLine, type Command } from '../command.ts';

export const devstackCommand: Command = {
  name: 'devstack',
  summary: 'run the whole platform on this machine (coming with the services)',
  usage: `pnpm xtask devstack

Coming: embedded PostgreSQL, an S3-protocol server, the PostgreSQL transport, all eight services,
demo traffic with aged history and a live view of every sweep. It lands with the services.`,
  run(ctx) {
    writeLine(ctx.stderr, 'devstack is coming with the services; see README.md');
    return Promise.resolve(1);
  },
};
