package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;

/**
 * A request that got no answer from its peer: no connection, the connection closed, or no reply
 * before the deadline. Unlike an error the peer sent, it says nothing about the peer's state,
 * only that this link did not carry the exchange; chain members report such failures to mgmt.
 */
public final class LinkFailure extends PlinthException {
    public LinkFailure(ErrorCode code, String message) {
        super(code, message);
    }

    public LinkFailure(ErrorCode code, String message, Throwable cause) {
        super(code, message, cause);
    }
}
