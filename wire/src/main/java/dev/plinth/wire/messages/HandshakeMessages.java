package dev.plinth.wire.messages;

/**
 * Mutual authentication with the cluster secret, before any other message: the client proves
 * it knows the secret by an HMAC of the server's nonce, and the server by an HMAC of the client's.
 */
public final class HandshakeMessages {
    private HandshakeMessages() {}

    public record Hello(int protocolVersion, String clientName, byte[] clientNonce) {}

    public record Challenge(int nodeId, byte[] serverNonce, byte[] serverProof) {}

    public record Authenticate(byte[] clientProof) {}

    public record Welcome(int nodeId) {}

    /** The header of an error frame. */
    public record ErrorReply(int code, String message) {}

    public record Empty() {}

    public static final Empty EMPTY = new Empty();
}
