// A node's way out to the edge, as TCP relays that can be cut: one relay
// listener per target (the tunnel's connect address, the edge's trace
// endpoint). A node's connector dials the edge through it and its agent's
// egress check goes through it too, so one cut takes both, as losing a
// node's uplink does.
//
// cut() destroys every relayed connection at once; until restore(), new
// connections meet the mode: "blackhole" accepts them and never forwards nor
// answers (packets dropped: the caller's own timeout must fire), "refuse"
// resets them at once. A connection that met the black hole stays in it
// after restore(): only its caller giving up and dialling again gets
// through, so the callers' timeouts are what recovery is tested on.
//
// What the model leaves out: a real cut is silent, so established
// connections die only when a keepalive or timeout notices; here they are
// closed at once (the edge's PING covers silence elsewhere). A real black
// hole stalls the TCP handshake itself, and a SYN retransmitted after the
// link is back can still get through; here the connect succeeds, nothing
// after it ever arrives, and nothing resumes. Latency, loss rates and
// bandwidth are not modelled.
import net from "node:net";

export async function startUplink(targets) {
  const state = { cut: null, relayed: new Set(), held: new Set() };
  const servers = [];
  for (const target of targets) {
    const server = net.createServer((socket) => accept(state, target, socket));
    await new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    servers.push(server);
  }
  const dropAll = (set) => {
    for (const socket of set) socket.destroy();
    set.clear();
  };
  return {
    addrs: servers.map((server) => ({ host: "127.0.0.1", port: server.address().port })),
    cut({ mode = "blackhole" } = {}) {
      if (mode !== "blackhole" && mode !== "refuse") {
        throw new Error(`uplink cut mode ${JSON.stringify(mode)}: use "blackhole" or "refuse"`);
      }
      state.cut = mode;
      dropAll(state.relayed);
    },
    restore() {
      state.cut = null;
    },
    get isCut() {
      return state.cut !== null;
    },
    async close() {
      dropAll(state.relayed);
      dropAll(state.held);
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(() => resolve()))));
    },
  };
}

function accept(state, target, socket) {
  socket.on("error", () => {});
  if (state.cut === "refuse") return socket.resetAndDestroy();
  if (state.cut === "blackhole") {
    state.held.add(socket);
    socket.on("close", () => state.held.delete(socket));
    return;
  }
  const upstream = net.connect(target.port, target.host);
  upstream.on("error", () => {});
  // Either end going away takes the other with it, as one TCP path would.
  for (const [from, to] of [
    [socket, upstream],
    [upstream, socket],
  ]) {
    state.relayed.add(from);
    from.setNoDelay(true);
    from.pipe(to);
    from.on("close", () => {
      state.relayed.delete(from);
      to.destroy();
    });
  }
}
