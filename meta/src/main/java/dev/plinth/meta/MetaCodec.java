package dev.plinth.meta;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.BinaryReader;
import dev.plinth.common.codec.BinaryWriter;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.wire.Protocol;

/**
 * Encodings of Raft log entries and their results. An entry is a batch of changes: a count, then
 * for each change its message type, length and record. The entry's result is a count, then for
 * each change a length and its result: a status byte followed by the response record or by an
 * error code and message. Results are stored for deduplication, so they are part of the on-disk
 * format.
 */
final class MetaCodec {
    private static final int OK = 0;
    private static final int FAILED = 1;

    private MetaCodec() {}

    static byte[] encodeRequest(Record request) {
        BinaryWriter writer = new BinaryWriter(256, 8 << 20);
        writer.writeInt(Protocol.typeOf(request));
        RecordCodec.encode(request, writer);
        return writer.toByteArray();
    }

    static Record decodeRequest(byte[] bytes) {
        BinaryReader reader = new BinaryReader(bytes);
        Class<? extends Record> type = Protocol.requestClass(reader.readInt());
        Record request = RecordCodec.decode(type, reader);
        reader.expectEnd();
        return request;
    }

    /** One change as a batch holds it: its message type and encoded record. */
    record EncodedChange(int type, byte[] body) {
        static EncodedChange of(Record request) {
            return new EncodedChange(Protocol.typeOf(request), RecordCodec.encode(request));
        }

        /** What it adds to a batch. */
        int bytes() {
            return 8 + body.length;
        }
    }

    /**
     * Log entries hold at most this much (the first change of a batch is taken whatever its size;
     * one change is at most a MiB of Data-on-MDT bytes and its fields). Half of Ratis's
     * {@code raft.server.log.appender.buffer.byte-limit} (4 MB): Ratis refuses a longer entry with a
     * state machine exception and its leader steps down (RaftLogBase: "exceeds the max buffer
     * limit"), so 128 changes of a MiB batched into 8 MiB entries kept a single-replica group
     * leaderless for 30 s in a test, re-elected and stepping down again each time.
     */
    static final int BATCH_BYTES_MAX = 2 << 20;

    static byte[] encodeBatch(java.util.List<EncodedChange> changes) {
        int bytes = 4 + changes.stream().mapToInt(EncodedChange::bytes).sum();
        BinaryWriter writer = new BinaryWriter(bytes, 64 << 20);
        writer.writeInt(changes.size());
        for (EncodedChange change : changes) {
            writer.writeInt(change.type());
            writer.writeBytes(change.body());
        }
        return writer.toByteArray();
    }

    static java.util.List<Record> decodeBatch(byte[] bytes) {
        BinaryReader reader = new BinaryReader(bytes);
        int count = reader.readInt();
        if (count < 0 || count > reader.remaining()) {
            throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "batch of " + count + " changes in " + bytes.length + " bytes");
        }
        java.util.List<Record> requests = new java.util.ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            Class<? extends Record> type = Protocol.requestClass(reader.readInt());
            requests.add(RecordCodec.decode(type, reader.readBytes()));
        }
        reader.expectEnd();
        return requests;
    }

    static byte[] encodeResults(java.util.List<byte[]> results) {
        BinaryWriter writer = new BinaryWriter(64 * results.size() + 16, 64 << 20);
        writer.writeInt(results.size());
        results.forEach(writer::writeBytes);
        return writer.toByteArray();
    }

    static java.util.List<byte[]> decodeResults(byte[] bytes) {
        BinaryReader reader = new BinaryReader(bytes);
        int count = reader.readInt();
        java.util.List<byte[]> results = new java.util.ArrayList<>(Math.max(0, count));
        for (int i = 0; i < count; i++) {
            results.add(reader.readBytes());
        }
        reader.expectEnd();
        return results;
    }

    static byte[] ok(Record response) {
        BinaryWriter writer = new BinaryWriter(128, 16 << 20);
        writer.writeByte(OK);
        RecordCodec.encode(response, writer);
        return writer.toByteArray();
    }

    static byte[] failed(ErrorCode code, String message) {
        BinaryWriter writer = new BinaryWriter(64, 1 << 16);
        writer.writeByte(FAILED);
        writer.writeInt(code.wireCode());
        writer.writeString(message.length() > 1000 ? message.substring(0, 1000) : message);
        return writer.toByteArray();
    }

    /** The response of a result, or the PlinthException it holds. */
    static <R extends Record> R decodeResult(Class<R> responseType, byte[] result) {
        BinaryReader reader = new BinaryReader(result);
        if (reader.readByte() == OK) {
            R response = RecordCodec.decode(responseType, reader);
            reader.expectEnd();
            return response;
        }
        ErrorCode code = ErrorCode.fromWireCode(reader.readInt());
        throw new PlinthException(code, reader.readString());
    }
}
