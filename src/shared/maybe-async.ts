// A value that is ready now or later. The request pipeline's common case (a budget counted in
// memory, a session answered from the session cache) is ready now; awaiting it anyway would cost a
// promise and a trip through the microtask queue on every request, so such steps return the value
// itself and only the slow case returns a promise.

export type MaybePromise<T> = T | Promise<T>

/** `next(value)`, at once when `value` is ready, else once it resolves. */
export function andThen<T, R>(value: MaybePromise<T>, next: (value: T) => MaybePromise<R>): MaybePromise<R> {
  return value instanceof Promise ? value.then(next) : next(value)
}
