// Preloaded with `node --import` into server-everything's streamableHttp mode by bench/run.ts, and
// nowhere else. That server calls app.listen(PORT) without a host, which binds every interface;
// this pins a bare-port listen() to loopback. Nothing else about the server changes. run.ts then
// finds the port it bound (PORT=0, so the kernel picks one) from /proc and checks it is loopback.
import net from 'node:net'

const HOST = '127.0.0.1'
const listen = net.Server.prototype.listen

net.Server.prototype.listen = function (...args) {
  const port = args[0]
  const isPort = typeof port === 'number' || (typeof port === 'string' && /^\d+$/.test(port))
  if (isPort && typeof args[1] !== 'string') args.splice(1, 0, HOST)
  return listen.apply(this, args)
}
