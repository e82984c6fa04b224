// The user's one column list and mapper (src/user/rows.ts), in process: the session lookup's SQL is
// written from signedInUserColumns, so a column that the signed-in user is made of but that list
// misses would reach the API as undefined.
import t from 'tap'
import { signedInUserColumns, toSignedInUser, USER_FIELDS, type UserColumn } from '../../src/user/rows.js'

/** A row holding exactly `columns`, each with a value of its own. */
const rowOf = (columns: readonly UserColumn[]) => Object.fromEntries(columns.map((c) => [c, `value of ${c}`]))

function undefinedFields(value: unknown, path = 'user'): string[] {
  if (value === undefined) return [path]
  if (value === null || typeof value !== 'object') return []
  return Object.entries(value).flatMap(([key, inner]) => undefinedFields(inner, `${path}.${key}`))
}

t.test('the session lookup reads every column the signed-in user is made of', async (t) => {
  // biome-ignore lint/suspicious/noExplicitAny: a row of stand-in values, one per column read
  const user = toSignedInUser(rowOf(signedInUserColumns) as any)
  t.same(undefinedFields(user), [], 'no field left undefined')
  t.equal(user.profile.birthPlace as unknown, 'value of birth_place')
  t.equal(user.banExpiresAt as unknown, 'value of ban_expires')
  t.equal(new Set(signedInUserColumns).size, signedInUserColumns.length, 'each column read once')
})

t.test('each column has one field name, and no two columns share one', async (t) => {
  const names = Object.values(USER_FIELDS)
  t.equal(new Set(names).size, names.length)
})
