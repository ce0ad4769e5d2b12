/**
 * The warmpath steps that can be switched off one at a time (the router's
 * `placementOff` list), to measure what each one pays: name → what placement
 * does without it. Each switch falls back to the simpler rule the step
 * refines, so the other steps keep working and their branch names keep their
 * meaning.
 */
export const SWITCHABLE_STEPS = {
  warm: 'no prefix awareness: every request takes the cold path (ring, spill, least-loaded) on its affinity key',
  'warm-over-bound':
    'a deeper warm replica over the bound is never taken: the warm pick within the bound, else the cold path',
  balance: 'the warm pick keeps a prefix warm on several replicas even when it is over its share',
  'balance-spread':
    "with N routers, balance's target is the first nearly idle replica in the key's ring order, as with one router, not one of the first N drawn by the request",
  'key-tie-break':
    "equally warm replicas are told apart by prefill queue and id alone, with or without a routing key, and a keyed new task follows the holders of its shared prefix rather than its key's ring",
  overlay: "warmth is read from the replicas' published digests alone, not from this router's recent dispatches",
  horizon:
    'equally warm replicas are told apart by their prefill queue alone, not also by the work their recent clients will likely send over the next homeHorizonMs',
  slice:
    'equally warm replicas are told apart by prefill queue and id alone however many routers share the clients (no per-request slice of them)',
  'queue-limit':
    'no queue limit is sent with a pick: an agent admits the request however much more prefill other routers queued there since its report',
  expect:
    "against the bound's floor and in the prefill queue, a replica counts only its report and this router's work since, not the other routers' work its published arrival rate predicts",
  share:
    "against the bound's floor, this router's work since a replica's report counts once, not once per router sharing the clients",
  'bound-floor': 'no floor in the load bound: a replica with little work counts as full once over c × its share',
  spill:
    'a cold base-model prefix whose ring home is over the bound goes to the least-loaded replica, not along the ring',
  'spill-two-choices':
    "a cold prefix stays on the first admissible replica in ring order whatever the second's prefill queue",
  'spill-least-queued':
    "a cold prefix stays on the ring's choices however much longer their prefill queue is than another replica's",
  'retry-two-choices': 'a retry after a refusal is placed as a first attempt is: the same next best on every router',
  'adapter-home':
    "a cold adapter request follows its affinity key's ring like a base-model request, not the adapter's own ring",
} as const;

export type SwitchableStep = keyof typeof SWITCHABLE_STEPS;
export const SWITCHABLE_STEP_NAMES = Object.freeze(Object.keys(SWITCHABLE_STEPS) as SwitchableStep[]);
