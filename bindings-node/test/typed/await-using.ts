// `await using` with a guard and a client: compiled by tsc and run by types.test.mjs.
import assert from 'node:assert/strict'
import { connect, type Guard } from 'polylock'

async function main(url: string): Promise<void> {
  let escaped: Guard | undefined
  {
    await using client = await connect(url)
    const lock = client.lock(`await-using:${process.pid}`)
    {
      await using guard = await lock.acquire()
      escaped = guard
      assert.equal(await lock.tryAcquire(), null)
    }
    assert.equal(escaped.released, true, 'leaving the scope released the guard')
    const next = await lock.tryAcquire()
    assert.ok(next, 'the lock is free again')
    await next.release()
    {
      // Disposing a guard released by hand is a no-op.
      await using held = await lock.acquire()
      await held.release()
    }
    // Leaving the scope resigns a leadership: the election has no leader then.
    const election = client.election(`await-using-election:${process.pid}`)
    let term: bigint
    {
      await using leadership = await election.campaign('me', { waitMs: 5000 })
      term = leadership.term
      assert.equal((await election.leader())?.term, term)
    }
    assert.equal(await election.leader(), null, 'leaving the scope resigned')
  }
  console.log('ok')
}

await main(process.argv[2] ?? 'mem://await-using')
