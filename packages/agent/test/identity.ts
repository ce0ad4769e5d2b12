/** A fresh identity (the core may set its role) of the one replica the agent core's unit tests run. */
export const testIdentity = () => ({
  fleet: 'f',
  replica: 'r1',
  boot: 'b',
  bootAt: 1,
  url: 'http://r1',
  admin: 'http://a',
  engine: 'vllm' as const,
});
