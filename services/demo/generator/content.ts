// The demo store's articles (care guides, styling) and pages.
import { COLORS, PRODUCT_TYPES } from './vocab.ts';
import { IMAGE_SIZE, type DemoStore, ARTICLE_ID_BASE, PAGE_ID_BASE, BLOG_ID, DAY, slug } from './model.ts';
import type { DemoBase } from './base.ts';

export function demoContent(base: DemoBase): Pick<DemoStore, 'articles' | 'pages'> {
  const { o, root, imageUrl } = base;
  // --- content -----------------------------------------------------------------------------------
  const contentRng = root.fork('content');
  const articles: DemoStore['articles'] = [];
  const articleTopics: [string, string, string][] = [];
  for (const t of PRODUCT_TYPES) {
    for (const mat of t.materials.slice(0, 2)) {
      articleTopics.push([`How to care for your ${mat.toLowerCase()} ${t.plural.toLowerCase()}`, t.slug, mat]);
    }
    articleTopics.push([
      `Five ways to style ${t.plural.toLowerCase()} this ${t.season === 'winter' ? 'winter' : 'summer'}`,
      t.slug,
      t.materials[0],
    ]);
  }
  const authors = ['Maya Lindqvist', 'Tomás Ferreira', 'Priya Nair', 'Jonas Weber', 'Aiko Tanaka'];
  contentRng.shuffle(articleTopics);
  articleTopics.slice(0, 36).forEach(([title, typeSlug, mat], k) => {
    const published = o.anchorMs - Math.round(contentRng.next() * 365 * DAY);
    const colour = contentRng.pick(COLORS);
    articles.push({
      id: String(ARTICLE_ID_BASE + k + 1),
      handle: slug(title),
      title,
      body_html:
        `<p>${title}. Our editors share what they learned about ${mat.toLowerCase()} and how to make it last.</p>` +
        `<img src="${imageUrl(typeSlug, colour.slug, 0)}" alt="${title}">` +
        `<p>Wash cool, dry flat and store away from direct sun. Pair with pieces in ${colour.name.toLowerCase()} for an easy look.</p>`,
      author: contentRng.pick(authors),
      tags: [typeSlug, slug(mat), 'guide'],
      image: { src: imageUrl(typeSlug, colour.slug, 0), width: IMAGE_SIZE, height: IMAGE_SIZE, alt: title },
      blog_id: BLOG_ID,
      blog_handle: 'journal',
      published: true,
      published_at: new Date(published).toISOString(),
      created_at: new Date(published - DAY).toISOString(),
      updated_at: new Date(published).toISOString(),
      metafields: null,
    });
  });
  const pageDefs: [string, string][] = [
    ['About Us', 'We make considered everyday goods with partners we know by name.'],
    [
      'Shipping and Returns',
      'Free shipping over $75 in the US and €70 in the EU. Returns within 30 days, free of charge.',
    ],
    ['Size Guide', 'Our sizes run true to fit. Measure chest, waist and hips and compare with the table below.'],
    ['Gift Cards', 'Gift cards are delivered by email and never expire.'],
    ['Sustainability', 'Organic and recycled materials, repair programmes and carbon-neutral shipping.'],
    ['Contact', 'Write to hello@demo-store.example, we answer within one business day.'],
  ];
  const pages: DemoStore['pages'] = pageDefs.map(([title, text], k) => ({
    id: String(PAGE_ID_BASE + k + 1),
    handle: slug(title),
    title,
    body_html: `<h1>${title}</h1><p>${text}</p>`,
    author: null,
    tags: [],
    image: null,
    published: true,
    published_at: new Date(o.anchorMs - 700 * DAY).toISOString(),
    created_at: new Date(o.anchorMs - 700 * DAY).toISOString(),
    updated_at: new Date(o.anchorMs - 30 * DAY).toISOString(),
    metafields: k === 5 ? [{ namespace: 'seo', key: 'hidden', value: '1', type: 'number_integer' }] : null,
  }));
  return { articles, pages };
}
