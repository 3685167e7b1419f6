// kafkajs 2.2.4 consumer groups against a running Lakestream broker
// (LS_TEST_BOOTSTRAP=host:port; tests/run.sh starts one via lsbroker.py with a
// short group.min.session.timeout.ms).
//
// Output: one "PASS name" or "FAIL name: why" line per test; exit code 1 if any
// failed. No fixed sleeps: conditions are polled with deadlines.
'use strict'

const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const BOOTSTRAP = process.env.LS_TEST_BOOTSTRAP
if (!BOOTSTRAP) {
  console.log('FAIL kafkajs_groups.setup: LS_TEST_BOOTSTRAP is not set')
  process.exit(1)
}
const RF = parseInt(process.env.LS_TEST_DEFAULT_RF || '3', 10)

const kafka = new Kafka({
  clientId: 'lakestream-kafkajs-groups',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.NOTHING,
  retry: { retries: 8, initialRetryTime: 100 },
})

const uniq = prefix => `${prefix}-${Math.random().toString(16).slice(2, 12)}`

async function waitFor(cond, what, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await cond()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise(r => setTimeout(r, 25))
  }
}

const tests = []
const test = (name, fn) => tests.push({ name, fn })

async function setupTopic(topic, partitions, count) {
  const admin = kafka.admin()
  await admin.connect()
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: RF }], waitForLeaders: true })
  } finally {
    await admin.disconnect()
  }
  const producer = kafka.producer()
  await producer.connect()
  try {
    const messages = []
    for (let i = 0; i < count; i++) messages.push({ partition: i % partitions, value: `v${i}` })
    await producer.send({ topic, messages })
  } finally {
    await producer.disconnect()
  }
}

function groupConsumer(groupId) {
  return kafka.consumer({
    groupId,
    sessionTimeout: 6000,
    heartbeatInterval: 300,
    rebalanceTimeout: 5000,
    maxWaitTimeInMs: 100,
    retry: { retries: 8, initialRetryTime: 100 },
  })
}

test('kafkajs_groups.two_consumers_share_partitions_and_commit', async () => {
  const topic = uniq('kjs-grp')
  const groupId = uniq('kjs-g')
  await setupTopic(topic, 4, 200)
  const seen = new Map()
  const consumers = [groupConsumer(groupId), groupConsumer(groupId)]
  const assigned = [new Set(), new Set()]
  try {
    for (const [i, c] of consumers.entries()) {
      c.on(c.events.GROUP_JOIN, e => {
        assigned[i] = new Set((e.payload.memberAssignment[topic] || []))
      })
      await c.connect()
      await c.subscribe({ topic, fromBeginning: true })
      await c.run({
        autoCommitInterval: 100,
        eachMessage: async ({ message }) => {
          const v = message.value.toString()
          seen.set(v, (seen.get(v) || 0) + 1)
        },
      })
    }
    await waitFor(() => seen.size === 200, 'all 200 records processed')
    await waitFor(() => assigned[0].size + assigned[1].size === 4 && assigned[0].size > 0 && assigned[1].size > 0,
      'both consumers assigned')
    const admin = kafka.admin()
    await admin.connect()
    try {
      await waitFor(async () => {
        const offs = await admin.fetchOffsets({ groupId, topics: [topic] })
        return offs[0].partitions.reduce((s, p) => s + Number(p.offset), 0) === 200
      }, 'committed offsets reach the end')
      const d = await admin.describeGroups([groupId])
      assert.equal(d.groups[0].state, 'Stable')
      assert.equal(d.groups[0].members.length, 2)
      assert.equal(d.groups[0].protocolType, 'consumer')
    } finally {
      await admin.disconnect()
    }
  } finally {
    for (const c of consumers) await c.disconnect()
  }
})

test('kafkajs_groups.restarted_consumer_resumes_from_commit', async () => {
  const topic = uniq('kjs-res')
  const groupId = uniq('kjs-r')
  await setupTopic(topic, 2, 50)
  let got = 0
  let c = groupConsumer(groupId)
  await c.connect()
  await c.subscribe({ topic, fromBeginning: true })
  await c.run({ autoCommitInterval: 50, eachMessage: async () => { got++ } })
  await waitFor(() => got === 50, 'first pass')
  await c.disconnect()   // commits pending offsets and leaves the group
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: [{ partition: 0, value: 'late-0' }, { partition: 1, value: 'late-1' }] })
  await producer.disconnect()
  const again = []
  c = groupConsumer(groupId)
  await c.connect()
  await c.subscribe({ topic, fromBeginning: true })
  await c.run({ eachMessage: async ({ message }) => { again.push(message.value.toString()) } })
  try {
    await waitFor(() => again.length >= 2, 'records after the commit')
    assert.deepEqual(again.sort(), ['late-0', 'late-1'])
  } finally {
    await c.disconnect()
  }
  const admin = kafka.admin()
  await admin.connect()
  try {
    const groups = (await admin.listGroups()).groups.map(g => g.groupId)
    assert.ok(groups.includes(groupId), 'group listed')
    const del = await admin.deleteGroups([groupId])
    assert.equal(del[0].errorCode, 0)
  } finally {
    await admin.disconnect()
  }
})

async function main() {
  let failed = 0
  for (const t of tests) {
    try {
      await t.fn()
      console.log(`PASS ${t.name}`)
    } catch (e) {
      failed++
      const why = (e && (e.stack || e.message || String(e))) || 'unknown'
      console.log(`FAIL ${t.name}: ${why.split('\n').slice(0, 6).join('\n    ')}`)
    }
  }
  process.exit(failed ? 1 : 0)
}

main().catch(e => {
  console.log(`FAIL kafkajs_groups.harness: ${e.stack || e}`)
  process.exit(1)
})
