// kafkajs 2.2.4 through a Lakestream cluster while a broker dies
// (driven by tests/integration/test_cluster.py, which starts the cluster and
// kills a broker when this script says it is half way).
//
//   node cluster_failover.js BOOTSTRAP(comma-separated) TOPIC PARTITIONS TOTAL
//
// Produces TOTAL records (idempotent, acks=all) in batches, printing
// "HALF" once half are acknowledged and waiting for a line on stdin before
// going on; then a consumer group of two members reads until every
// acknowledged value was seen. Prints one JSON line with the counts.
'use strict'

const readline = require('node:readline')
const { Kafka, logLevel } = require('kafkajs')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const [bootstrap, topic, partitionsArg, totalArg] = process.argv.slice(2)
const partitions = parseInt(partitionsArg, 10)
const total = parseInt(totalArg, 10)

const kafka = new Kafka({
  clientId: 'lakestream-kafkajs-cluster',
  brokers: bootstrap.split(','),
  logLevel: logLevel.NOTHING,
  retry: { retries: 30, initialRetryTime: 100, maxRetryTime: 1000 },
})

const lines = readline.createInterface({ input: process.stdin })
const nextLine = () => new Promise(resolve => lines.once('line', resolve))

async function main() {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const acked = new Set()
  const batch = 100
  for (let i = 0; i < total; i += batch) {
    if (i === total / 2) {
      console.log('HALF')
      await nextLine()
    }
    const messages = []
    for (let j = i; j < Math.min(i + batch, total); j++)
      messages.push({ partition: j % partitions, value: `k-${j}` })
    await producer.send({ topic, acks: -1, messages })
    for (const m of messages) acked.add(m.value)
  }
  await producer.disconnect()

  const groupId = `kjs-failover-${Math.random().toString(16).slice(2, 10)}`
  const seen = new Map()
  const members = []
  for (let k = 0; k < 2; k++) {
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 500,
                               retry: { retries: 30 } })
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async ({ message }) => {
      const v = message.value.toString()
      seen.set(v, (seen.get(v) || 0) + 1)
    } })
    members.push(c)
  }
  const deadline = Date.now() + 90000
  while ([...acked].some(v => !seen.has(v)) && Date.now() < deadline)
    await new Promise(r => setTimeout(r, 100))
  for (const c of members) await c.disconnect()
  const missing = [...acked].filter(v => !seen.has(v))
  console.log(JSON.stringify({ acked: acked.size, consumed: seen.size, missing: missing.length,
                               firstMissing: missing.slice(0, 5) }))
  lines.close()
}

main().catch(e => {
  console.log(JSON.stringify({ error: String(e && e.stack || e) }))
  process.exit(1)
})
