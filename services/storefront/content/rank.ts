// Content search ranking: candidates are the items matching the query's text (the best `topK` by text),
// re-ranked by three signal groups, each min-max normalized across the candidates and combined linearly:
//   text       BM25 over title, tags, summary, body and author (content/index.ts)
//   image      how much the item's image looks like the images of the products that best match the
//              query's text (the best similarity between the item's image and any image of the top
//              products of the product keyword index); 0 without an image or matching products
//   freshness  published_at (newer is better)
// Default weights text 0.5, image 0.2, freshness 0.3. `tuning.rankingWeightOverrides` sets the groups
// `semantic` (text + image, default 0.7) and `freshness` (default 0.3), normalized to sum 1;
// `tuning.textualWeight` / `visualWeight` split the semantic group between text and image (default 5:2).
import {
  type ContentItem,
  type ContentTuning,
  DEFAULT_CONTENT_TOP_K,
  DEFAULT_CONTENT_WEIGHTS,
} from '../../../schemas/content.ts';
import type { IndexedContent, StoreContent } from './index.ts';

export interface ContentWeights {
  text: number;
  image: number;
  freshness: number;
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;

/** The normalized weights of a request (the schema already refused unpaired or all-zero weights). */
export function contentWeights(tuning: ContentTuning | undefined): ContentWeights {
  const d = DEFAULT_CONTENT_WEIGHTS;
  const o = tuning?.rankingWeightOverrides;
  let semantic = o?.semantic ?? d.text + d.image;
  let freshness = o?.freshness ?? d.freshness;
  const sum = semantic + freshness;
  semantic /= sum;
  freshness /= sum;
  const tw = tuning?.textualWeight ?? d.text;
  const vw = tuning?.visualWeight ?? d.image;
  const split = tw + vw;
  return { text: round((semantic * tw) / split), image: round((semantic * vw) / split), freshness: round(freshness) };
}

/** min-max normalization over the candidates (all equal → all 0: the group cannot tell them apart) */
export function minMax(values: readonly number[]): number[] {
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const span = max - min;
  return values.map((v) => (span > 0 ? (v - min) / span : 0));
}

export interface RankedContent {
  item: IndexedContent;
  score: number;
  signals: { text: number; image: number; freshness: number };
}

export function rankContent(
  content: StoreContent,
  query: string,
  o: {
    contentType: 'article' | 'page' | null;
    topK?: number;
    weights: ContentWeights;
    /** the image signal of an item (0-1) */
    imageSimilarity: (item: IndexedContent) => number;
  },
): RankedContent[] {
  const matches = content
    .textScores(query, o.contentType)
    .sort((a, b) => b.score - a.score || a.item.view.content_id.localeCompare(b.item.view.content_id))
    .slice(0, o.topK ?? DEFAULT_CONTENT_TOP_K);
  const text = minMax(matches.map((m) => m.score));
  const image = minMax(matches.map((m) => (o.weights.image > 0 ? o.imageSimilarity(m.item) : 0)));
  const fresh = minMax(matches.map((m) => m.item.publishedSec));
  const w = o.weights;
  return matches
    .map((m, i) => ({
      item: m.item,
      score: w.text * text[i] + w.image * image[i] + w.freshness * fresh[i],
      signals: { text: text[i], image: image[i], freshness: fresh[i] },
    }))
    .sort(
      (a, b) =>
        b.score - a.score ||
        b.signals.text - a.signals.text ||
        Number(a.item.view.content_id) - Number(b.item.view.content_id),
    );
}

export function contentItemOf(c: IndexedContent): ContentItem {
  const v = c.view;
  return {
    __typename: v.content_type === 'article' ? 'Article' : 'Page',
    content_type: v.content_type,
    content_id: Number(v.content_id),
    title: v.title,
    handle: v.handle,
    summary_text: v.summary_text,
    author: v.author,
    tags: v.content_type === 'page' ? [] : v.tags,
    image: v.image
      ? { url: v.image.url, width: v.image.width, height: v.image.height, altText: v.image.altText }
      : null,
    published_at: v.published_at ?? v.updated_at,
  };
}
