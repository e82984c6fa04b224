// The one clock. Everything that asks "what time is it" (expiry of sessions, tokens and plans, usage
// periods, audit times) asks app.clock, so a test can move time and see every rule follow.
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }
