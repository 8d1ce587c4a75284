package dev.plinth.meta;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.BinaryReader;
import dev.plinth.common.codec.BinaryWriter;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.wire.Protocol;

/**
 * Encodings of Raft log entries and their results. An entry is the request's message type and
 * its record; a result is a status byte followed by the response record or by an error code and
 * message. Results are stored for deduplication, so they are part of the on-disk format.
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
