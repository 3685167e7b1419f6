// kafkajs 2.2.4 against a running Lakestream broker (LS_TEST_BOOTSTRAP=host:port;
// tests/run.sh starts one via tests/integration/lsbroker.py).
//
// Reading back without a group (test_kafkajs_groups.js covers the group
// consumer): reads go through kafkajs's own Cluster and
// Broker classes (the ones its consumer uses underneath): Metadata to find the
// leader, then Broker.fetch() with kafkajs's Fetch encoder and RecordBatch
// decoder — the same bytes-to-records path its consumer runs. Every topic is
// also read with kcat (librdkafka), an independent decoder.
//
// Output: one "PASS name" or "FAIL name: why" line per test; exit code 1 if any
// failed.
'use strict'

const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const { Kafka, CompressionTypes, logLevel } = require('kafkajs')
const Cluster = require('kafkajs/src/cluster')
const { createLogger } = require('kafkajs/src/loggers')
const LoggerConsole = require('kafkajs/src/loggers/console')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const BOOTSTRAP = process.env.LS_TEST_BOOTSTRAP
if (!BOOTSTRAP) {
  console.log('FAIL kafkajs.setup: LS_TEST_BOOTSTRAP is not set')
  process.exit(1)
}
const RF = parseInt(process.env.LS_TEST_DEFAULT_RF || '3', 10)

const kafka = new Kafka({
  clientId: 'lakestream-kafkajs-test',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.ERROR,
  retry: { retries: 5, initialRetryTime: 100 },
})

const uniq = prefix => `${prefix}-${Math.random().toString(16).slice(2, 12)}`

// ---- reading without groups ------------------------------------------------

async function withCluster(fn) {
  const cluster = new Cluster({
    logger: createLogger({ level: logLevel.ERROR, logCreator: LoggerConsole }),
    brokers: [BOOTSTRAP],
    clientId: 'lakestream-kafkajs-reader',
    connectionTimeout: 3000,
    requestTimeout: 30000,
    enforceRequestTimeout: true,
    socketFactory: require('kafkajs/src/network/socketFactory')(),
    retry: { retries: 3 },
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    isolationLevel: 1,
  })
  await cluster.connect()
  try {
    return await fn(cluster)
  } finally {
    await cluster.disconnect()
  }
}

// Reads partition `partition` from `from` until `count` records were seen.
async function fetchAll(topic, partition, count, from = 0) {
  return withCluster(async cluster => {
    await cluster.addTargetTopic(topic)
    await cluster.refreshMetadata()
    const leaders = cluster.findLeaderForPartitions(topic, [partition])
    const nodeId = Object.keys(leaders)[0]
    const broker = await cluster.findBroker({ nodeId })
    const out = []
    let offset = BigInt(from)
    const deadline = Date.now() + 30000
    while (out.length < count) {
      if (Date.now() > deadline) throw new Error(`fetch read ${out.length} of ${count} records`)
      const resp = await broker.fetch({
        replicaId: -1,
        isolationLevel: 1,
        maxWaitTime: 200,
        minBytes: 1,
        maxBytes: 10485760,
        topics: [{ topic, partitions: [{ partition, fetchOffset: offset.toString(), maxBytes: 1048576 }] }],
      })
      const p = resp.responses[0].partitions[0]
      if (p.errorCode !== 0) throw new Error(`fetch error code ${p.errorCode}`)
      for (const m of p.messages) {
        const o = BigInt(m.offset)
        if (o < offset) continue // a fetch inside a batch returns the whole batch
        out.push(m)
        offset = o + 1n
      }
    }
    return out
  })
}

function kcatRead(topic, partition) {
  const out = execFileSync('kcat', ['-C', '-b', BOOTSTRAP, '-t', topic, '-p', String(partition),
    '-o', 'beginning', '-e', '-q', '-f', '%o|%k|%s|%h\n'], { timeout: 60000 })
  return out.toString().split('\n').filter(l => l.length > 0)
}

// ---- harness -----------------------------------------------------------------

const tests = []
const test = (name, fn) => tests.push({ name, fn })

async function createTopic(admin, topic, numPartitions) {
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions, replicationFactor: RF }],
    waitForLeaders: true,
  })
  assert.equal(created, true, 'createTopics returned false')
}

// ---- tests -------------------------------------------------------------------

for (const [codecName, codec] of [['none', CompressionTypes.None], ['gzip', CompressionTypes.GZIP]]) {
  test(`kafkajs.produce_${codecName}_keys_headers_roundtrip`, async () => {
    const admin = kafka.admin()
    await admin.connect()
    const topic = uniq(`js-${codecName}`)
    try {
      await createTopic(admin, topic, 2)
    } finally {
      await admin.disconnect()
    }
    const producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()
    const sent = []
    try {
      for (let round = 0; round < 5; round++) {
        const messages = []
        for (let i = 0; i < 60; i++) {
          const n = round * 60 + i
          const m = {
            partition: n % 2,
            key: `key-${n % 7}`,
            value: `kafkajs ${codecName} message ${n} `.repeat(1 + (n % 5)),
            headers: { seq: String(n), codec: codecName },
            timestamp: String(1_690_000_000_000 + n),
          }
          messages.push(m)
          sent.push(m)
        }
        const res = await producer.send({ topic, acks: -1, compression: codec, messages })
        for (const r of res) assert.equal(r.errorCode, 0)
      }
    } finally {
      await producer.disconnect()
    }
    for (const partition of [0, 1]) {
      const want = sent.filter(m => m.partition === partition)
      const got = await fetchAll(topic, partition, want.length)
      assert.equal(got.length, want.length)
      got.forEach((m, i) => {
        assert.equal(m.offset, String(i))
        assert.equal(m.key.toString(), want[i].key)
        assert.equal(m.value.toString(), want[i].value)
        assert.equal(m.headers.seq.toString(), want[i].headers.seq)
        assert.equal(m.headers.codec.toString(), codecName)
        assert.equal(m.timestamp, want[i].timestamp)
      })
      const lines = kcatRead(topic, partition)
      assert.equal(lines.length, want.length, 'kcat line count')
      lines.forEach((l, i) => {
        const w = want[i]
        assert.equal(l, `${i}|${w.key}|${w.value}|seq=${w.headers.seq},codec=${codecName}`)
      })
    }
  })
}

test('kafkajs.null_values_and_no_keys', async () => {
  const admin = kafka.admin()
  await admin.connect()
  const topic = uniq('js-null')
  try {
    await createTopic(admin, topic, 1)
  } finally {
    await admin.disconnect()
  }
  const producer = kafka.producer()
  await producer.connect()
  try {
    await producer.send({
      topic,
      messages: [{ key: 'tomb', value: null }, { value: 'no key' }, { key: '', value: '' }],
    })
  } finally {
    await producer.disconnect()
  }
  const got = await fetchAll(topic, 0, 3)
  assert.equal(got[0].key.toString(), 'tomb')
  assert.equal(got[0].value, null)
  assert.equal(got[1].key, null)
  assert.equal(got[1].value.toString(), 'no key')
  assert.equal(got[2].key.toString(), '')
  assert.equal(got[2].value.toString(), '')
})

test('kafkajs.idempotent_producer', async () => {
  const admin = kafka.admin()
  await admin.connect()
  const topic = uniq('js-idem')
  try {
    await createTopic(admin, topic, 1)
  } finally {
    await admin.disconnect()
  }
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    for (let b = 0; b < 10; b++) {
      const messages = Array.from({ length: 50 }, (_, i) => ({ value: `idem-${b * 50 + i}` }))
      const [r] = await producer.send({ topic, acks: -1, messages })
      assert.equal(r.errorCode, 0)
      assert.equal(r.baseOffset, String(b * 50))
    }
  } finally {
    await producer.disconnect()
  }
  const got = await fetchAll(topic, 0, 500)
  assert.deepEqual(got.map(m => m.value.toString()), Array.from({ length: 500 }, (_, i) => `idem-${i}`))
})

test('kafkajs.acks_0', async () => {
  const admin = kafka.admin()
  await admin.connect()
  const topic = uniq('js-acks0')
  try {
    await createTopic(admin, topic, 1)
    const producer = kafka.producer()
    await producer.connect()
    try {
      for (let i = 0; i < 5; i++) {
        await producer.send({ topic, acks: 0, messages: [{ value: `a0-${i}` }] })
      }
    } finally {
      await producer.disconnect()
    }
    const got = await fetchAll(topic, 0, 5)
    assert.deepEqual(got.map(m => m.value.toString()), [0, 1, 2, 3, 4].map(i => `a0-${i}`))
  } finally {
    await admin.disconnect()
  }
})

test('kafkajs.admin_offsets_metadata_partitions_delete', async () => {
  const admin = kafka.admin()
  await admin.connect()
  const topic = uniq('js-admin')
  try {
    await createTopic(admin, topic, 2)
    const producer = kafka.producer()
    await producer.connect()
    try {
      await producer.send({
        topic,
        messages: Array.from({ length: 20 }, (_, i) => ({
          partition: 0, value: `v${i}`, timestamp: String(1_000_000 + 100 * i),
        })),
      })
    } finally {
      await producer.disconnect()
    }
    const offs = await admin.fetchTopicOffsets(topic)
    const p0 = offs.find(o => o.partition === 0)
    const p1 = offs.find(o => o.partition === 1)
    assert.equal(p0.high, '20')
    assert.equal(p0.low, '0')
    assert.equal(p1.high, '0')
    const byTs = await admin.fetchTopicOffsetsByTimestamp(topic, 1_000_000 + 100 * 7)
    assert.equal(byTs.find(o => o.partition === 0).offset, '7')

    const md = await admin.fetchTopicMetadata({ topics: [topic] })
    assert.equal(md.topics[0].partitions.length, 2)
    const cl = await admin.describeCluster()
    assert.ok(cl.brokers.length >= 1)
    assert.ok(cl.clusterId)

    await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] })
    const md2 = await admin.fetchTopicMetadata({ topics: [topic] })
    assert.equal(md2.topics[0].partitions.length, 4)

    const cfg = await admin.describeConfigs({ resources: [{ type: 2, name: topic }], includeSynonyms: false })
    const entries = cfg.resources[0].configEntries.map(e => e.configName)
    assert.ok(entries.includes('retention.ms'), `describeConfigs: ${entries}`)

    await admin.deleteTopics({ topics: [topic] })
    const deadline = Date.now() + 20000
    while ((await admin.listTopics()).includes(topic)) {
      if (Date.now() > deadline) throw new Error('deleted topic still listed')
      await new Promise(r => setTimeout(r, 50))
    }
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
  console.log(`FAIL kafkajs.harness: ${e.stack || e}`)
  process.exit(1)
})
