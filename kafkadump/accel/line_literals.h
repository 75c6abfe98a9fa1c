/* Every literal the compiled JSON line writers put in a line: the record lines (recordlines.c) and the
 * batch lines (batchlines.c) besides the fields the registry gives (generated_fields.h).  Each is the
 * exact text render.jsonl's Python writers put there (the reference; the parity tests hold the two
 * byte-identical).  Only #defines of string literals, so that a writer may take sizeof of one (PUT_LIT). */
#ifndef KAFKADUMP_LINE_LITERALS_H
#define KAFKADUMP_LINE_LITERALS_H

/* ---- JSON values and brackets ---- */
#define JSON_NULL "null"
#define JSON_TRUE "true"
#define JSON_FALSE "false"
#define JSON_LIST_OPEN "["
#define JSON_LIST_CLOSE "]"
#define JSON_OBJECT_CLOSE "}"

/* ---- a record line (render.jsonl.RecordLines): its own fields are the registry's (generated_fields.h,
 * the text between them from Python); then these ---- */
#define REC_KEY_PAYLOAD ",\"keyPayload\":"
#define REC_VALUE_PAYLOAD ",\"valuePayload\":"
#define REC_LINE_END "}\n"
/* one header of "headers": {"key":..,"value":..} */
#define REC_HEADER_FIRST "{\"key\":"
#define REC_HEADER_NEXT ",{\"key\":"
#define REC_HEADER_VALUE ",\"value\":"
/* a byte field that is not text, in the auto encoding: {"base64":"..."} */
#define REC_BASE64_OPEN "{\"base64\":"
/* keyPayload / valuePayload: report.records.framing_object without headers naming a schema */
#define REC_FRAMING_NONE "{\"framing\":null}"
#define REC_FRAMING_SHORT "{\"framing\":\"confluent\",\"certain\":false,\"schemaId\":null,\"guid\":null}"
#define REC_FRAMING_CERTAIN_ID "{\"framing\":\"confluent\",\"certain\":true,\"schemaId\":"
#define REC_FRAMING_UNCERTAIN_ID "{\"framing\":\"confluent\",\"certain\":false,\"schemaId\":"
#define REC_FRAMING_ID_END ",\"guid\":null}"

/* ---- a batch line (render.generated_lines.v2_batch_line): its start, then the header integers
 * (generated_fields.h's KD_BATCH_INTS), then these, in the order it writes them ---- */
#define BATCH_START "{\"type\":\"batch\",\"file\":"
#define BATCH_LAST_OFFSET ",\"lastOffset\":"
#define BATCH_LAST_SEQUENCE ",\"lastSequence\":"
#define BATCH_COMPRESSION ",\"compression\":"
/* decode.compression.CODEC_NAMES (and Batch.compression's "unknown(N)"), as JSON, by codec number */
#define BATCH_CODEC_0 "\"none\""
#define BATCH_CODEC_1 "\"gzip\""
#define BATCH_CODEC_2 "\"snappy\""
#define BATCH_CODEC_3 "\"lz4\""
#define BATCH_CODEC_4 "\"zstd\""
#define BATCH_CODEC_5 "\"unknown(5)\""
#define BATCH_CODEC_6 "\"unknown(6)\""
#define BATCH_CODEC_7 "\"unknown(7)\""
#define BATCH_TIMESTAMP_TYPE_LOG_APPEND ",\"timestampType\":\"LogAppendTime\""
#define BATCH_TIMESTAMP_TYPE_CREATE ",\"timestampType\":\"CreateTime\""
#define BATCH_IS_TRANSACTIONAL ",\"isTransactional\":"
#define BATCH_IS_CONTROL_BATCH ",\"isControlBatch\":"
#define BATCH_HAS_DELETE_HORIZON_MS ",\"hasDeleteHorizonMs\":"
#define BATCH_CRC_VALID ",\"crcValid\":"
#define BATCH_COMPUTED_CRC ",\"computedCrc\":"
#define BATCH_DECOMPRESSED_SIZE ",\"decompressedSize\":"
#define BATCH_END ",\"findings\":[]}"

#endif
