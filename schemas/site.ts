// The public site's contracts: the form bodies of POST /api/footer-subscribe, /api/article-unlock,
// /api/integration-request, /api/integration-correction and /api/arcade/scores (application/x-www-form-urlencoded,
// every field a string), and the site event each accepted submission becomes on `site.events.v1` (projected
// by the `site` processor into `site_events_raw`). Field rules are the spec's "Site endpoints" and "Limits".
import { z } from 'zod';
import { isoUtc } from './events.ts';

/** an article slug as in /articles/{slug} */
export const SLUG_RE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

const trimmed = (min: number, max: number) =>
  z
    .string()
    .trim()
    .min(min, min === 1 ? 'is required' : `must be at least ${min} characters`)
    .max(max, `must be at most ${max} characters`);
const email = z.string().trim().max(254, 'must be at most 254 characters').pipe(z.email('must be an email address'));
const uri = (max: number) =>
  z
    .string()
    .trim()
    .max(max, `must be at most ${max} characters`)
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));
/** an optional text field: omitted or empty means absent */
const optional = <T extends z.ZodType>(s: T) =>
  z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), s.optional());

/** the spam-trap field every form carries, hidden from people: a bot that fills it is not stored */
export const SPAM_TRAP_FIELD = 'company_website';
const spamTrap = z.string().optional().describe('spam trap: leave empty');

export const NEWSLETTER_SOURCES = ['newsletter', 'changelog'] as const;

export const FooterSubscribeFormSchema = z.object({
  email,
  source: z.preprocess(
    (v) => (v === '' || v === undefined ? 'newsletter' : v),
    z.enum(NEWSLETTER_SOURCES, { error: 'must be newsletter or changelog' }),
  ),
  [SPAM_TRAP_FIELD]: spamTrap,
});

export const ArticleUnlockFormSchema = z.object({
  email,
  slug: trimmed(1, 120).regex(SLUG_RE, 'must be an article slug (lower-case words joined by -)'),
  [SPAM_TRAP_FIELD]: spamTrap,
});

/** the integration catalog's categories; anything else is `Other` */
export const INTEGRATION_CATEGORIES = [
  'Commerce platform',
  'Reviews',
  'Loyalty',
  'Search and merchandising',
  'Analytics',
  'Email and SMS',
  'Headless and CMS',
  'Other',
] as const;

export const IntegrationRequestFormSchema = z.object({
  name: trimmed(1, 120),
  email,
  service_name: trimmed(1, 120),
  category: z.enum(INTEGRATION_CATEGORIES, { error: `must be one of: ${INTEGRATION_CATEGORIES.join(', ')}` }),
  store_url: optional(uri(200)),
  notes: trimmed(1, 2000),
  [SPAM_TRAP_FIELD]: spamTrap,
});

export const IntegrationCorrectionFormSchema = z.object({
  integration_name: trimmed(1, 120),
  integration_slug: trimmed(1, 120),
  details: trimmed(1, 2000),
  email,
  name: optional(trimmed(1, 120)),
  page_url: optional(uri(300)),
  [SPAM_TRAP_FIELD]: spamTrap,
});

export const ARCADE_MAX_SCORE = 1_000_000;
export const ArcadeScoreFormSchema = z.object({
  player: trimmed(1, 24).regex(/^[\p{L}\p{N} _.-]+$/u, 'letters, digits, spaces, _ . - only'),
  score: z
    .string()
    .trim()
    .regex(/^\d{1,7}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(0).max(ARCADE_MAX_SCORE, `must be at most ${ARCADE_MAX_SCORE}`)),
  [SPAM_TRAP_FIELD]: spamTrap,
});

/** each form of the site by its event kind */
export const SITE_FORMS = {
  footer_subscribe: FooterSubscribeFormSchema,
  article_unlock: ArticleUnlockFormSchema,
  integration_request: IntegrationRequestFormSchema,
  integration_correction: IntegrationCorrectionFormSchema,
  arcade_score: ArcadeScoreFormSchema,
} as const;
export type SiteEventKind = keyof typeof SITE_FORMS;
export const SITE_EVENT_KINDS = Object.keys(SITE_FORMS) as [SiteEventKind, ...SiteEventKind[]];
export type SiteForm<K extends SiteEventKind> = z.output<(typeof SITE_FORMS)[K]>;

/** One accepted site submission (topic `site.events.v1`). */
export const SiteEventSchema = z.object({
  event_id: z.string().describe('ULID of the submission; the `id` the 200 answered'),
  kind: z.enum(SITE_EVENT_KINDS).describe('which form'),
  received_at: isoUtc.describe('when the site received it, UTC'),
  email: z.string().nullable().describe('the address given (subscribe, unlock, integration forms)'),
  fields_json: z.string().describe("the form's validated fields (spam trap removed), JSON"),
  player: z.string().nullable().describe('arcade_score: the player name'),
  score: z.number().int().min(0).max(ARCADE_MAX_SCORE).nullable().describe('arcade_score: the score'),
  client_ip_hash: z
    .string()
    .nullable()
    .describe('SHA-256 (hex, first 16) of the client address: abuse checks, no raw IP'),
  user_agent: z.string().nullable(),
});
export type SiteEvent = z.infer<typeof SiteEventSchema>;

/** The acknowledged-result fields every form's 200 carries. */
export const AcknowledgedSchema = z.object({
  ok: z.literal(true),
  id: z.string().describe('ULID of the stored submission'),
  status: z.enum(['subscribed', 'unlocked', 'received', 'recorded']),
  message: z.string(),
});
export type Acknowledged = z.infer<typeof AcknowledgedSchema>;

export const ArticleUnlockResultSchema = AcknowledgedSchema.extend({
  articleUrl: z.url(),
  emailSent: z.boolean().describe('false: the address is stored; the mail goes out from the stored event'),
});

/** GET /api/searches-served */
export const SearchesServedSchema = z.object({
  count: z.string().describe('searches served, in billions, as a decimal string'),
  label: z.string(),
});
