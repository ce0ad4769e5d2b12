// Fails early, with a clear message, when scripts run on a Node.js older than
// the one libp2p needs (Promise.withResolvers and friends arrive in Node 22).
const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(`warmpath needs Node.js >= 22 (found ${process.version}); run it through "npm test" / "npm run demo", which bring Node 24.`);
  process.exit(1);
}
