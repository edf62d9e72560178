// Search feedback records: one per POST /search/feedback, written by the read API to
// `storefront.feedback.v1` (acknowledged before the 201) and projected by the `feedback` processor into
// `search_feedback`. The search context (query, expansions, intent-modifier actions) is present when the
// read API still held the search (15 minutes), else `has_search_context` is false and those are empty.
import { z } from 'zod';
import { isoUtc } from './events.ts';

const RATING = z.enum(['positive', 'negative']);

export const SearchFeedbackRecordSchema = z.object({
  feedback_id: z.string().describe('ULID of the record; the `id` the 201 answered'),
  store_id: z.string(),
  search_id: z.string().describe('the rated search: a prepare search_id or an execute attributionToken'),
  received_at: isoUtc.describe('when the read API received the feedback, UTC'),
  rating: RATING.nullable(),
  text_feedback: z.string().max(2000).nullable(),
  product_feedback: z
    .array(
      z.object({
        product_id: z.string().regex(/^\d{1,20}$/),
        rating: RATING.nullable(),
        feedback: z.string().max(500).nullable(),
      }),
    )
    .describe('per-product ratings and notes'),
  session_id: z.string().nullable().describe('identity.sessionId'),
  customer_id: z.string().nullable().describe('identity.customerId'),
  has_search_context: z.boolean().describe('the search was still cached (within 15 minutes)'),
  query: z.string().nullable().describe('the query as sent'),
  normalized_query: z.string().nullable(),
  expanded_queries: z.array(z.string()).describe('corrected, synonym and rule expansions of the query'),
  intent_modifiers_json: z.string().nullable().describe('the intent-modifier actions applied, JSON'),
});
export type SearchFeedbackRecord = z.infer<typeof SearchFeedbackRecordSchema>;
