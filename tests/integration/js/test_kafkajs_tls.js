// kafkajs over TLS (ssl: { ca }) against a Lakestream SSL listener at
// LS_TEST_BOOTSTRAP, trusting the CA file LS_TEST_CA (hostname verified, as
// Node does by default). Run by tests/integration/test_tls.py. Produces 50
// records to a new topic and reads them back with a group consumer; prints
// "PASS kafkajs_tls" or "FAIL kafkajs_tls: why", exit code 1 on failure.
'use strict'

const fs = require('node:fs')
const { Kafka, logLevel } = require('kafkajs')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const kafka = new Kafka({
  clientId: 'lakestream-kafkajs-tls',
  brokers: [process.env.LS_TEST_BOOTSTRAP],
  ssl: { ca: [fs.readFileSync(process.env.LS_TEST_CA, 'utf8')] },
  logLevel: logLevel.ERROR,
})

async function main () {
  const topic = `kafkajs-tls-${Math.random().toString(16).slice(2, 12)}`
  const n = 50
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({
    topic,
    messages: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
  })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `g-${topic}` })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${got.length} of ${n} in 60 s`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value.toString())
        if (got.length === n) {
          clearTimeout(timer)
          resolve()
        }
      },
    })
  })
  await consumer.disconnect()
  for (let i = 0; i < n; i++) {
    if (got[i] !== `v${i}`) throw new Error(`record ${i} is ${got[i]}`)
  }
}

main().then(() => {
  console.log('PASS kafkajs_tls')
  process.exit(0)
}, e => {
  console.log(`FAIL kafkajs_tls: ${e && e.stack ? e.stack : e}`)
  process.exit(1)
})
