import type { Sql } from '@craig/db';
import { perRegistry } from '@craig/mq';
import { setTimeout as delay } from 'node:timers/promises';
import pino, { type Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';

export interface ExchangeWorkerOptions {
  /** The exchange database's pool. */
  readonly sql: Sql;
  readonly registry: Registry;
  readonly logger?: Logger;
  /** Delivery attempts after which a send job that cannot be delivered is `failed`; default 3. */
  readonly maxAttempts?: number;
  /** Rows of each kind one step moves; default 100. */
  readonly batchSize?: number;
  /** Wait between steps that found less than a batch; default 1 s. */
  readonly intervalMs?: number;
}

/** What one {@link ExchangeWorker.step} moved. */
export interface WorkerStep {
  /** Send jobs that reached `sent`, `failed`, or stayed `sending` for another attempt. */
  readonly sent: number;
  readonly failed: number;
  readonly retried: number;
  /** Members that reached a terminal status, and the handoffs written for the matched ones. */
  readonly membersCompleted: number;
  readonly handoffs: number;
  /** Runs that reached `completed` or `failed`. */
  readonly runsCompleted: number;
  readonly runsFailed: number;
}

const transitionCounter = perRegistry((registry): Counter<'table' | 'status'> => new Counter({ name: 'exchange_transitions_total', help: 'Rows the exchange worker moved, by table and the status they reached.', labelNames: ['table', 'status'], registers: [registry] }));

/**
 * The simulated exchange with the outside world, deterministic so tests and the devstack can
 * predict it:
 *
 * - a send job is delivered on its first attempt unless its destination starts with
 *   `unreachable`; such a job stays `sending` and is `failed` at `maxAttempts`;
 * - a member's outcome is decided by its `person_ref`: a `!error`, `!match` or `!clear` suffix
 *   names it; otherwise the first byte of its MD5 (below 64: `matched`, else `cleared`);
 *   every matched member gets one `ssa_transport_handoffs` row, in the same transaction;
 * - a run whose members are all terminal is `completed` (`failed` when every member errored).
 *
 * Every UPDATE carries the source status in its WHERE (`queued`/`sending`, `pending`,
 * `running`), so a terminal row is never moved again, whoever else (a cancel, another replica)
 * got there first. Rows are claimed with `FOR UPDATE SKIP LOCKED`, so replicas share the work.
 */
export class ExchangeWorker {
  private readonly logger: Logger;
  private readonly maxAttempts: number;
  private readonly batchSize: number;
  private readonly intervalMs: number;
  private readonly transitions: Counter<'table' | 'status'>;

  constructor(private readonly options: ExchangeWorkerOptions) {
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'exchange-worker' });
    this.maxAttempts = options.maxAttempts ?? 3;
    this.batchSize = options.batchSize ?? 100;
    this.intervalMs = options.intervalMs ?? 1_000;
    for (const [name, value] of [['maxAttempts', this.maxAttempts], ['batchSize', this.batchSize]] as const) {
      if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number ≥ 1: ${value}`);
    }
    this.transitions = transitionCounter(options.registry);
  }

  /** One step: an attempt for up to a batch of live send jobs, then members, then runs. */
  async step(): Promise<WorkerStep> {
    const sql = this.options.sql;
    const jobs = await sql<{ status: string; n: number }[]>`
      with picked as (
        select id from exchange_send_jobs
        where status in ('queued', 'sending')
        order by id
        limit ${this.batchSize}
        for update skip locked
      ), attempted as (
        update exchange_send_jobs j
        set attempts = j.attempts + 1,
            status = case when j.destination not like 'unreachable%' then 'sent'
                          when j.attempts + 1 >= ${this.maxAttempts} then 'failed'
                          else 'sending' end,
            finished_at = case when j.destination not like 'unreachable%' or j.attempts + 1 >= ${this.maxAttempts} then now() end
        from picked
        where j.id = picked.id and j.status in ('queued', 'sending')
        returning j.status
      )
      select status, count(*)::int as n from attempted group by status`;
    const jobCount = (status: string) => jobs.find((r) => r.status === status)?.n ?? 0;

    const [members] = await sql<{ completed: number; handoffs: number }[]>`
      with picked as (
        select m.id from ssa_screening_members m
        join ssa_screening_runs r on r.id = m.run_id
        where m.status = 'pending' and r.status = 'running'
        order by m.id
        limit ${this.batchSize}
        for update of m skip locked
      ), done as (
        update ssa_screening_members m
        set status = case when m.person_ref like '%!error' then 'error'
                          when m.person_ref like '%!match' then 'matched'
                          when m.person_ref like '%!clear' then 'cleared'
                          when get_byte(decode(md5(m.person_ref), 'hex'), 0) < 64 then 'matched'
                          else 'cleared' end,
            completed_at = now()
        from picked
        where m.id = picked.id and m.status = 'pending'
        returning m.id, m.run_id, m.person_ref, m.status
      ), handed as (
        insert into ssa_transport_handoffs (member_id, payload)
        select d.id, jsonb_build_object('runId', d.run_id::text, 'caseId', r.case_id, 'personRef', d.person_ref, 'asOf', r.as_of::text)
        from done d join ssa_screening_runs r on r.id = d.run_id
        where d.status = 'matched'
        returning 1
      )
      select (select count(*) from done)::int as completed, (select count(*) from handed)::int as handoffs`;

    const runs = await sql<{ status: string; n: number }[]>`
      with picked as (
        select r.id from ssa_screening_runs r
        where r.status = 'running'
          and not exists (select 1 from ssa_screening_members m where m.run_id = r.id and m.status = 'pending')
        order by r.id
        limit ${this.batchSize}
        for update skip locked
      ), done as (
        update ssa_screening_runs r
        set status = case when exists (select 1 from ssa_screening_members m where m.run_id = r.id and m.status <> 'error') then 'completed' else 'failed' end,
            completed_at = now()
        from picked
        where r.id = picked.id and r.status = 'running'
          and not exists (select 1 from ssa_screening_members m where m.run_id = r.id and m.status = 'pending')
        returning r.status
      )
      select status, count(*)::int as n from done group by status`;
    const runCount = (status: string) => runs.find((r) => r.status === status)?.n ?? 0;

    const step: WorkerStep = {
      sent: jobCount('sent'),
      failed: jobCount('failed'),
      retried: jobCount('sending'),
      membersCompleted: members!.completed,
      handoffs: members!.handoffs,
      runsCompleted: runCount('completed'),
      runsFailed: runCount('failed'),
    };
    for (const [table, status, n] of [
      ['exchange_send_jobs', 'sent', step.sent],
      ['exchange_send_jobs', 'failed', step.failed],
      ['ssa_screening_members', 'terminal', step.membersCompleted],
      ['ssa_transport_handoffs', 'written', step.handoffs],
      ['ssa_screening_runs', 'completed', step.runsCompleted],
      ['ssa_screening_runs', 'failed', step.runsFailed],
    ] as const) {
      if (n > 0) this.transitions.inc({ table, status }, n);
    }
    return step;
  }

  /** Step until `signal` aborts: at once again after a full batch, else after `intervalMs`. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      let busy = false;
      try {
        const step = await this.step();
        busy = step.sent + step.failed + step.retried >= this.batchSize || step.membersCompleted >= this.batchSize || step.runsCompleted + step.runsFailed >= this.batchSize;
        if (step.sent + step.failed + step.membersCompleted + step.runsCompleted + step.runsFailed > 0) this.logger.debug(step, 'exchange worker step');
      } catch (error) {
        // Logged and retried at the next step: every move is one guarded statement, so a failed
        // step leaves each row where it was.
        this.logger.error({ err: error }, 'exchange worker step failed');
      }
      if (!busy) await sleep(this.intervalMs, signal);
    }
  }
}

async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await delay(ms, undefined, { signal });
  } catch {
    // aborted: the loop condition ends the run
  }
}
