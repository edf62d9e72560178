// The demo store's product images over HTTP for stack suites: the test stack runs without the demo module
// (DEMO_STORE=false), which is what serves /demo/images in `npm start`. Rendered by the demo generator's
// renderer in this process, memoized per name.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseImageName, renderImage } from '../../services/demo/generator/images.ts';

export interface DemoImageServer {
  /** the image base URL to generate a demo store with (`<base>/<type>-<colour>-<pattern>.png`) */
  base: string;
  /** a rendered image by name (the bytes the server answers) */
  render(name: string): Promise<Buffer>;
  close(): void;
}

export async function serveDemoImages(): Promise<DemoImageServer> {
  const rendered = new Map<string, Promise<Buffer>>();
  const render = (name: string) => {
    let p = rendered.get(name);
    const spec = parseImageName(name);
    if (!spec) throw new Error(`not a demo image: ${name}`);
    if (!p) rendered.set(name, (p = renderImage(spec)));
    return p;
  };
  const server = createServer((req, res) => {
    const name = (req.url ?? '').split('/').pop() ?? '';
    if (!parseImageName(name)) {
      res.writeHead(404);
      return res.end();
    }
    void render(name).then((png) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(png);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/img`,
    render,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}
