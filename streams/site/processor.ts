// The `site` processor: site.events.v1 → site_events_raw, one row per public-site submission (a repeated
// event_id is removed by the runtime's dedup before this code runs). The site's readers (the arcade
// leaderboard, the operations dashboard) read the table; the mailer would read the topic.
import { type SiteEvent, SiteEventSchema } from '../../schemas/site.ts';
import type { Decoded, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';

/** the one site of the platform (the table's leading key, as store_id is elsewhere) */
export const SITE = 'public';

export const siteProcessor: Processor<SiteEvent> = {
  name: 'site',
  topic: 'site',
  tables: {
    written: ['site_events_raw'],
    views: [],
    compare: { site_events_raw: { day: 'received_at', measure: 'count()' } },
  },
  parse: (value) => zodParse(SiteEventSchema, value),
  dedupKey: (e) => `${SITE}:${e.event_id}`,
  async process(batch: Decoded<SiteEvent>[]): Promise<ProcessResult> {
    return { writes: [{ table: 'site_events_raw', rows: batch.map(siteRow) }] };
  },
};

function siteRow(d: Decoded<SiteEvent>) {
  const e = d.value;
  return {
    site: SITE,
    received_at: chTime(e.received_at),
    event_id: e.event_id,
    kind: e.kind,
    email: e.email,
    fields_json: e.fields_json,
    player: e.player,
    score: e.score,
    client_ip_hash: e.client_ip_hash,
    user_agent: e.user_agent,
    _partition: d.position.partition,
    _offset: d.position.offset.toString(),
  };
}
