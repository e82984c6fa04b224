// Text with an unpaired surrogate is refused elsewhere (journal, results: 400, "PostgreSQL cannot
// store it"), but updateProfile and update-user accept it with 200 and store U+FFFD instead: the
// service answers success while silently writing something other than what was sent.
import t from 'tap'
import { buildTestApp, signUp, WEB_ORIGIN } from '../helpers/app.js'

t.test('a name with an unpaired surrogate is a 400, not silently rewritten', async (t) => {
  const app = await buildTestApp()
  const user = await signUp(app, { name: 'Before' })
  for (const url of ['/api/v1/updateProfile', '/api/auth/update-user']) {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { origin: WEB_ORIGIN, cookie: user.cookie, 'content-type': 'application/json' },
      payload: '{"name":"A\\ud800B"}',
    })
    t.equal(res.statusCode, 400, `${url}: ${res.body.slice(0, 120)}`)
  }
  const row = await app.db.selectFrom('user').select('name').where('id', '=', user.id).executeTakeFirstOrThrow()
  t.equal(row.name, 'Before', 'nothing was written')
})
