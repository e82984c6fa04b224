// Dates as the API writes them: calendar dates are UTC 'YYYY-MM-DD', instants ISO-8601.

/** The UTC calendar date of `now`. */
export const todayUtc = (now: Date): string => now.toISOString().slice(0, 10)

/** An instant as ISO-8601, null kept. */
export const iso = (d: Date | null): string | null => (d ? d.toISOString() : null)
