// The vocabulary of the demo store: product types (with their image shape, sizes, materials and price
// band), colours, vendors, style and line names. Plain data; generator.ts combines it with a seed.

export interface ProductTypeSpec {
  /** singular display name, the platform `product_type` */
  name: string;
  plural: string;
  /** url-safe key, also the image shape name */
  slug: string;
  category: 'Apparel' | 'Footwear' | 'Accessories' | 'Home' | 'Beauty';
  sizes: readonly string[];
  materials: readonly string[];
  /** base price band in USD */
  price: readonly [number, number];
  /** how often this type occurs (relative) */
  weight: number;
  season: 'summer' | 'winter' | 'all-season';
}

const APPAREL_SIZES = ['XS', 'S', 'M', 'L', 'XL'] as const;
const SHOE_SIZES = ['6', '7', '8', '9', '10', '11'] as const;
const WAIST_SIZES = ['28', '30', '32', '34', '36'] as const;

export const PRODUCT_TYPES: readonly ProductTypeSpec[] = [
  {
    name: 'Dress',
    plural: 'Dresses',
    slug: 'dress',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Linen', 'Cotton', 'Silk', 'Jersey', 'Denim'],
    price: [39, 189],
    weight: 9,
    season: 'summer',
  },
  {
    name: 'Shirt',
    plural: 'Shirts',
    slug: 'shirt',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Linen', 'Cotton', 'Oxford', 'Flannel', 'Denim'],
    price: [29, 119],
    weight: 8,
    season: 'all-season',
  },
  {
    name: 'T-Shirt',
    plural: 'T-Shirts',
    slug: 'tshirt',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Cotton', 'Organic Cotton', 'Jersey', 'Merino'],
    price: [15, 59],
    weight: 9,
    season: 'summer',
  },
  {
    name: 'Sweater',
    plural: 'Sweaters',
    slug: 'sweater',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Wool', 'Cashmere', 'Merino', 'Cotton'],
    price: [49, 229],
    weight: 6,
    season: 'winter',
  },
  {
    name: 'Jacket',
    plural: 'Jackets',
    slug: 'jacket',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Denim', 'Leather', 'Wool', 'Nylon', 'Corduroy'],
    price: [79, 349],
    weight: 5,
    season: 'winter',
  },
  {
    name: 'Jeans',
    plural: 'Jeans',
    slug: 'jeans',
    category: 'Apparel',
    sizes: WAIST_SIZES,
    materials: ['Denim', 'Stretch Denim', 'Selvedge Denim'],
    price: [49, 169],
    weight: 6,
    season: 'all-season',
  },
  {
    name: 'Trousers',
    plural: 'Trousers',
    slug: 'trousers',
    category: 'Apparel',
    sizes: WAIST_SIZES,
    materials: ['Linen', 'Wool', 'Cotton', 'Corduroy'],
    price: [49, 149],
    weight: 5,
    season: 'all-season',
  },
  {
    name: 'Skirt',
    plural: 'Skirts',
    slug: 'skirt',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Linen', 'Denim', 'Silk', 'Wool'],
    price: [35, 129],
    weight: 4,
    season: 'summer',
  },
  {
    name: 'Shorts',
    plural: 'Shorts',
    slug: 'shorts',
    category: 'Apparel',
    sizes: APPAREL_SIZES,
    materials: ['Linen', 'Cotton', 'Denim'],
    price: [25, 79],
    weight: 4,
    season: 'summer',
  },
  {
    name: 'Sneakers',
    plural: 'Sneakers',
    slug: 'sneakers',
    category: 'Footwear',
    sizes: SHOE_SIZES,
    materials: ['Leather', 'Canvas', 'Suede', 'Mesh'],
    price: [59, 179],
    weight: 6,
    season: 'all-season',
  },
  {
    name: 'Boots',
    plural: 'Boots',
    slug: 'boots',
    category: 'Footwear',
    sizes: SHOE_SIZES,
    materials: ['Leather', 'Suede', 'Rubber'],
    price: [89, 289],
    weight: 4,
    season: 'winter',
  },
  {
    name: 'Sandals',
    plural: 'Sandals',
    slug: 'sandals',
    category: 'Footwear',
    sizes: SHOE_SIZES,
    materials: ['Leather', 'Cork', 'Rubber'],
    price: [29, 119],
    weight: 4,
    season: 'summer',
  },
  {
    name: 'Bag',
    plural: 'Bags',
    slug: 'bag',
    category: 'Accessories',
    sizes: [],
    materials: ['Leather', 'Canvas', 'Straw', 'Nylon'],
    price: [39, 299],
    weight: 5,
    season: 'all-season',
  },
  {
    name: 'Backpack',
    plural: 'Backpacks',
    slug: 'backpack',
    category: 'Accessories',
    sizes: [],
    materials: ['Canvas', 'Nylon', 'Leather'],
    price: [49, 199],
    weight: 3,
    season: 'all-season',
  },
  {
    name: 'Hat',
    plural: 'Hats',
    slug: 'hat',
    category: 'Accessories',
    sizes: ['S/M', 'L/XL'],
    materials: ['Wool', 'Straw', 'Cotton'],
    price: [19, 89],
    weight: 3,
    season: 'all-season',
  },
  {
    name: 'Scarf',
    plural: 'Scarves',
    slug: 'scarf',
    category: 'Accessories',
    sizes: [],
    materials: ['Wool', 'Silk', 'Cashmere'],
    price: [25, 149],
    weight: 3,
    season: 'winter',
  },
  {
    name: 'Sunglasses',
    plural: 'Sunglasses',
    slug: 'sunglasses',
    category: 'Accessories',
    sizes: [],
    materials: ['Acetate', 'Metal', 'Recycled'],
    price: [49, 229],
    weight: 3,
    season: 'summer',
  },
  {
    name: 'Watch',
    plural: 'Watches',
    slug: 'watch',
    category: 'Accessories',
    sizes: [],
    materials: ['Steel', 'Leather', 'Titanium'],
    price: [89, 499],
    weight: 2,
    season: 'all-season',
  },
  {
    name: 'Belt',
    plural: 'Belts',
    slug: 'belt',
    category: 'Accessories',
    sizes: ['S', 'M', 'L'],
    materials: ['Leather', 'Canvas', 'Suede'],
    price: [25, 95],
    weight: 2,
    season: 'all-season',
  },
  {
    name: 'Mug',
    plural: 'Mugs',
    slug: 'mug',
    category: 'Home',
    sizes: [],
    materials: ['Ceramic', 'Stoneware', 'Enamel', 'Glass'],
    price: [12, 39],
    weight: 4,
    season: 'all-season',
  },
  {
    name: 'Candle',
    plural: 'Candles',
    slug: 'candle',
    category: 'Home',
    sizes: [],
    materials: ['Soy Wax', 'Beeswax', 'Coconut Wax'],
    price: [15, 59],
    weight: 3,
    season: 'winter',
  },
  {
    name: 'Lamp',
    plural: 'Lamps',
    slug: 'lamp',
    category: 'Home',
    sizes: [],
    materials: ['Brass', 'Ceramic', 'Rattan', 'Glass'],
    price: [59, 299],
    weight: 2,
    season: 'all-season',
  },
  {
    name: 'Cushion',
    plural: 'Cushions',
    slug: 'cushion',
    category: 'Home',
    sizes: [],
    materials: ['Linen', 'Velvet', 'Wool', 'Cotton'],
    price: [25, 89],
    weight: 3,
    season: 'all-season',
  },
  {
    name: 'Vase',
    plural: 'Vases',
    slug: 'vase',
    category: 'Home',
    sizes: [],
    materials: ['Ceramic', 'Glass', 'Stoneware'],
    price: [19, 129],
    weight: 2,
    season: 'all-season',
  },
  {
    name: 'Blanket',
    plural: 'Blankets',
    slug: 'blanket',
    category: 'Home',
    sizes: [],
    materials: ['Wool', 'Cotton', 'Cashmere'],
    price: [49, 259],
    weight: 2,
    season: 'winter',
  },
  {
    name: 'Face Serum',
    plural: 'Face Serums',
    slug: 'serum',
    category: 'Beauty',
    sizes: ['30 ml', '50 ml'],
    materials: ['Vitamin C', 'Hyaluronic', 'Retinol', 'Niacinamide'],
    price: [19, 89],
    weight: 2,
    season: 'all-season',
  },
  {
    name: 'Lip Balm',
    plural: 'Lip Balms',
    slug: 'lipbalm',
    category: 'Beauty',
    sizes: [],
    materials: ['Shea', 'Beeswax', 'Vegan'],
    price: [6, 19],
    weight: 2,
    season: 'all-season',
  },
];

export interface ColorSpec {
  name: string;
  slug: string;
  hex: string;
  /** a patterned colour: its swatch metaobject carries an image of this pattern (images.ts: 1 stripes, 2 dots, 3 band) */
  swatchPattern?: 1 | 2 | 3;
}

export const COLORS: readonly ColorSpec[] = [
  { name: 'Black', slug: 'black', hex: '#1f1f1f' },
  { name: 'White', slug: 'white', hex: '#fafafa' },
  { name: 'Navy', slug: 'navy', hex: '#1f3a5f', swatchPattern: 1 },
  { name: 'Blue', slug: 'blue', hex: '#3b6fb6' },
  { name: 'Red', slug: 'red', hex: '#c0392b' },
  { name: 'Green', slug: 'green', hex: '#2e7d4f' },
  { name: 'Olive', slug: 'olive', hex: '#6b7a3a', swatchPattern: 2 },
  { name: 'Beige', slug: 'beige', hex: '#d8c3a5' },
  { name: 'Brown', slug: 'brown', hex: '#7b4a2e' },
  { name: 'Grey', slug: 'grey', hex: '#8a8d91' },
  { name: 'Pink', slug: 'pink', hex: '#e8a0b4' },
  { name: 'Yellow', slug: 'yellow', hex: '#e6c229' },
  { name: 'Orange', slug: 'orange', hex: '#e07b39' },
  { name: 'Purple', slug: 'purple', hex: '#6d4c9f' },
  { name: 'Cream', slug: 'cream', hex: '#efe6d2' },
  { name: 'Burgundy', slug: 'burgundy', hex: '#6e1f2f' },
];

/** vendors by category (a vendor sells in one or two categories) */
export const VENDORS: Readonly<Record<ProductTypeSpec['category'], readonly string[]>> = {
  Apparel: [
    'Northwind Supply',
    'Lumen & Loom',
    'Atelier Vale',
    'Cobalt Street',
    'Fernhill',
    'Saltmarsh',
    'Halcyon',
    'Redwood Outfitters',
  ],
  Footwear: ['Zephyr Footwear', 'Kestrel Goods', 'Redwood Outfitters', 'Ironbark'],
  Accessories: ['Paloma Studio', 'Kestrel Goods', 'Tidewater Co.', 'Atelier Vale', 'Umber'],
  Home: ['Marigold Home', 'Oslo Ceramics', 'Quill & Hearth', 'Yarrow'],
  Beauty: ['Verde Beauty', 'Wildflower Apothecary'],
};

export const STYLES = [
  'Classic',
  'Relaxed',
  'Slim',
  'Oversized',
  'Essential',
  'Vintage',
  'Everyday',
  'Weekend',
  'Tailored',
  'Cropped',
  'Lightweight',
  'Heritage',
  'Modern',
  'Soft',
  'Utility',
  'Minimal',
  'Textured',
  'Washed',
  'Structured',
  'Easy',
] as const;

/** line names used in titles ("Harbor Linen Shirt") */
export const LINES = [
  'Harbor',
  'Aspen',
  'Coastal',
  'Meadow',
  'Alpine',
  'Nordic',
  'Riviera',
  'Sierra',
  'Juniper',
  'Cedar',
  'Willow',
  'Ember',
  'Atlas',
  'Luna',
  'Terra',
  'Drift',
  'Haven',
  'Marlow',
  'Oakley',
  'Sable',
  'Brook',
  'Fjord',
  'Canyon',
  'Dune',
  'Grove',
  'Pebble',
  'Quarry',
  'Reef',
  'Summit',
  'Tundra',
  'Vista',
  'Wren',
  'Birch',
  'Coral',
  'Delta',
  'Elm',
  'Flint',
  'Glen',
] as const;

/** the store's configured synonyms (config.ts writes them; the search evaluation uses their two-way groups) */
export const SYNONYMS = [
  { id: 'sneakers', type: 'two_way', terms: ['sneakers', 'trainers', 'kicks'] },
  { id: 'tshirt', type: 'two_way', terms: ['t-shirt', 'tee', 'tshirt'] },
  { id: 'trousers', type: 'one_way', term: 'pants', synonyms: ['trousers', 'jeans'] },
  { id: 'sweater', type: 'two_way', terms: ['sweater', 'jumper', 'pullover'] },
] as const;

/** shopper phrases no product text contains: only what sessions chose after searching them can answer them */
export const LEARNED_PHRASES = ['date night outfit', 'festival fit'] as const;

/** a line name no ordinary product uses: the planted trending burst is about this new line */
export const BURST_LINE = 'Solstice';

export const LOCATIONS = [
  { id: '71000000001', name: 'US Warehouse' },
  { id: '71000000002', name: 'EU Warehouse' },
] as const;

/** complementary product types bought together (bundle templates) */
export const BUNDLE_TEMPLATES: readonly (readonly string[])[] = [
  ['dress', 'sandals', 'bag'],
  ['jeans', 'belt', 'sneakers'],
  ['mug', 'candle'],
  ['sweater', 'scarf'],
  ['shirt', 'trousers'],
  ['tshirt', 'shorts', 'sunglasses'],
  ['jacket', 'boots'],
  ['cushion', 'blanket'],
  ['serum', 'lipbalm'],
  ['lamp', 'vase'],
  ['hat', 'sunglasses'],
  ['backpack', 'watch'],
];

/** client addresses the replay sends as X-Forwarded-For (resolved by geoip-lite: US and EU shoppers) */
export const SHOPPER_IPS = {
  us: ['8.8.8.8', '4.2.2.2', '52.14.0.1', '98.137.11.163', '23.20.0.1'],
  eu: ['85.214.132.117', '212.27.48.10', '193.99.144.80', '145.131.0.1', '80.58.61.250'],
} as const;

export const USER_AGENTS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
] as const;
