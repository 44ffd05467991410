import * as net from 'net';

/**
 * A TCP proxy in front of a database server that can cut the network: `partition()` silently
 * drops every byte both ways (queries hang, as behind a dead link); `heal()` resets the cut
 * connections (as TCP eventually does) and forwards again. `refuse()` closes every connection and
 * each new one at once (a server that is down), until `heal()`; `connections` counts the
 * connections clients opened.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly pairs = new Set<[net.Socket, net.Socket]>();
  private cut = false;
  private refusing = false;
  port = 0;
  connections = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this;
  }

  /** `url` with its host and port replaced by the proxy's. */
  rewrite(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = '127.0.0.1';
    parsed.port = String(this.port);
    return parsed.toString();
  }

  partition(): void {
    this.cut = true;
  }

  refuse(): void {
    this.refusing = true;
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    this.pairs.clear();
  }

  heal(): void {
    this.cut = false;
    this.refusing = false;
    for (const [a, b] of this.pairs) {
      a.destroy();
      b.destroy();
    }
    this.pairs.clear();
  }

  async close(): Promise<void> {
    this.heal();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.connections++;
    if (this.refusing) {
      client.on('error', () => undefined);
      client.destroy();
      return;
    }
    const upstream = net.connect(this.targetPort, this.targetHost);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    this.pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        if (!this.cut) to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  }
}
