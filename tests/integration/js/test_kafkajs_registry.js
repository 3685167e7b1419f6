// @kafkajs/confluent-schema-registry 4.1.0 (with kafkajs 2.2.4) against a
// running Lakestream broker and its built-in schema registry
// (LS_TEST_BOOTSTRAP, LS_TEST_REGISTRY_URL; tests/run.sh starts one via
// tests/integration/lsbroker.py).
//
// Shown: Avro, JSON and Protobuf schemas registered by the library, records encoded
// with the registry's ids, produced through the broker, consumed by a group
// and decoded by a fresh client that fetches the schemas by id; an
// incompatible schema is refused with the registry's 409.
//
// Output: one "PASS name" or "FAIL name: why" line per test; exit code 1 if any
// failed.
'use strict'

const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')
const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const BOOTSTRAP = process.env.LS_TEST_BOOTSTRAP
const REGISTRY = process.env.LS_TEST_REGISTRY_URL
if (!BOOTSTRAP || !REGISTRY) {
  console.log('FAIL kafkajs_registry.setup: LS_TEST_BOOTSTRAP / LS_TEST_REGISTRY_URL not set')
  process.exit(1)
}

const kafka = new Kafka({
  clientId: 'lakestream-kafkajs-registry-test',
  brokers: [BOOTSTRAP],
  logLevel: logLevel.ERROR,
  retry: { retries: 5, initialRetryTime: 100 },
})
const uniq = prefix => `${prefix}-${Math.random().toString(16).slice(2, 12)}`

// Produces the encoded values, reads them back with a consumer group.
async function roundTrip(topic, values) {
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
  await admin.disconnect()
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic, messages: values.map(value => ({ value })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: uniq('g') })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const got = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed ${got.length} of ${values.length}`)), 30000)
    consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value)
        if (got.length === values.length) {
          clearTimeout(timer)
          resolve()
        }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  return got
}

const tests = [
  {
    name: 'kafkajs_registry.avro_register_encode_produce_consume_decode',
    async run() {
      const registry = new SchemaRegistry({ host: REGISTRY })
      const schema = {
        type: 'record', name: 'Click', namespace: 'lake',
        fields: [{ name: 'user', type: 'string' }, { name: 'n', type: 'long' },
          { name: 'ref', type: ['null', 'string'], default: null }],
      }
      const subject = uniq('clicks') + '-value'
      const { id } = await registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject })
      assert.ok(id >= 1)
      // the same schema again: the same id
      const again = await registry.register(
        { type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject })
      assert.equal(again.id, id)
      assert.equal(await registry.getLatestSchemaId(subject), id)
      const payloads = [...Array(10).keys()].map(i => ({ user: `u${i}`, n: i, ref: i % 2 ? null : 'r' }))
      const encoded = await Promise.all(payloads.map(p => registry.encode(id, p)))
      const got = await roundTrip(uniq('clicks'), encoded)
      const fresh = new SchemaRegistry({ host: REGISTRY })
      const decoded = await Promise.all(got.map(v => fresh.decode(v)))
      assert.deepEqual(decoded.map(d => ({ ...d })), payloads)

      // a field without default breaks BACKWARD: the registry's 409
      const bad = { ...schema, fields: [...schema.fields, { name: 'extra', type: 'int' }] }
      await assert.rejects(
        registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(bad) }, { subject }),
        e => e.status === 409)
    },
  },
  {
    name: 'kafkajs_registry.json_register_encode_produce_consume_decode',
    async run() {
      const registry = new SchemaRegistry({ host: REGISTRY })
      const schema = {
        $schema: 'http://json-schema.org/draft-07/schema#', type: 'object',
        properties: { id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
        required: ['id'], additionalProperties: false,
      }
      const subject = uniq('orders') + '-value'
      const { id } = await registry.register(
        { type: SchemaType.JSON, schema: JSON.stringify(schema) }, { subject })
      const payloads = [...Array(5).keys()].map(i => ({ id: i, tags: [`t${i}`] }))
      const encoded = await Promise.all(payloads.map(p => registry.encode(id, p)))
      const got = await roundTrip(uniq('orders'), encoded)
      const fresh = new SchemaRegistry({ host: REGISTRY })
      assert.deepEqual(await Promise.all(got.map(v => fresh.decode(v))), payloads)
    },
  },
  {
    name: 'kafkajs_registry.protobuf_register_encode_produce_consume_decode',
    async run() {
      const registry = new SchemaRegistry({ host: REGISTRY })
      const schema = `
        syntax = "proto3";
        package lake.shop;
        // an order line
        message Line {
          string sku = 1;
          int32 qty = 2;
          map<string, string> tags = 3;
          oneof price { double amount = 4; string free_reason = 5; }
        }`
      const subject = uniq('lines') + '-value'
      const { id } = await registry.register({ type: SchemaType.PROTOBUF, schema }, { subject })
      const payloads = [...Array(5).keys()].map(i => ({ sku: `s${i}`, qty: i + 1, tags: { k: `v${i}` }, amount: i * 1.5 }))
      const encoded = await Promise.all(payloads.map(p => registry.encode(id, p)))
      const got = await roundTrip(uniq('lines'), encoded)
      const fresh = new SchemaRegistry({ host: REGISTRY })
      const decoded = await Promise.all(got.map(v => fresh.decode(v)))
      assert.deepEqual(decoded.map(d => ({ sku: d.sku, qty: d.qty, tags: d.tags, amount: d.amount })), payloads)
      // a field's scalar kind changes group: the registry's 409
      const bad = schema.replace('int32 qty = 2', 'string qty = 2')
      await assert.rejects(
        registry.register({ type: SchemaType.PROTOBUF, schema: bad }, { subject }),
        e => e.status === 409)
    },
  },
]

;(async () => {
  let failed = 0
  for (const t of tests) {
    try {
      await t.run()
      console.log(`PASS ${t.name}`)
    } catch (e) {
      failed++
      const why = (e && e.stack) || String(e)
      console.log(`FAIL ${t.name}: ${why.split('\n').slice(0, 6).join('\n    ')}`)
    }
  }
  process.exit(failed ? 1 : 0)
})().catch(e => {
  console.log(`FAIL kafkajs_registry.harness: ${e.stack || e}`)
  process.exit(1)
})
