// The `feedback` processor: storefront.feedback.v1 → search_feedback, one row per feedback record (a
// repeated feedback_id is removed by the runtime's dedup before this code runs).
import { type SearchFeedbackRecord, SearchFeedbackRecordSchema } from '../../schemas/feedback.ts';
import type { Decoded, Processor, ProcessResult } from '../runtime/types.ts';
import { chTime, zodParse } from '../runtime/util.ts';

export const feedbackProcessor: Processor<SearchFeedbackRecord> = {
  name: 'feedback',
  topic: 'feedback',
  tables: {
    written: ['search_feedback'],
    views: [],
    compare: { search_feedback: { day: 'received_at', measure: 'count()' } },
  },
  parse: (value) => zodParse(SearchFeedbackRecordSchema, value),
  dedupKey: (r) => `${r.store_id}:${r.feedback_id}`,
  ledger: { table: 'search_feedback', idColumn: 'feedback_id', timeColumn: 'received_at' },
  async process(batch: Decoded<SearchFeedbackRecord>[]): Promise<ProcessResult> {
    return { writes: [{ table: 'search_feedback', rows: batch.map(feedbackRow) }] };
  },
};

function feedbackRow(d: Decoded<SearchFeedbackRecord>) {
  const r = d.value;
  return {
    store_id: r.store_id,
    received_at: chTime(r.received_at),
    feedback_id: r.feedback_id,
    search_id: r.search_id,
    rating: r.rating,
    text_feedback: r.text_feedback,
    product_feedback: r.product_feedback.map((p) => ({
      product_id: p.product_id,
      rating: p.rating,
      feedback: p.feedback,
    })),
    session_id: r.session_id,
    customer_id: r.customer_id,
    has_search_context: r.has_search_context,
    query: r.query,
    normalized_query: r.normalized_query,
    expanded_queries: r.expanded_queries,
    intent_modifiers_json: r.intent_modifiers_json,
    _partition: d.position.partition,
    _offset: d.position.offset.toString(),
  };
}
