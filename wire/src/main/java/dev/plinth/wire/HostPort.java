package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.net.InetSocketAddress;

/** A "host:port" address as written in settings and flags. */
public record HostPort(String host, int port) {
    public HostPort {
        if (host == null || host.isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "empty host");
        }
        if (port < 0 || port > 65535) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "port out of range: " + port);
        }
    }

    public static HostPort parse(String text) {
        int colon = text == null ? -1 : text.lastIndexOf(':');
        if (colon <= 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "expected HOST:PORT, got '" + text + "'");
        }
        try {
            return new HostPort(text.substring(0, colon), Integer.parseInt(text.substring(colon + 1)));
        } catch (NumberFormatException e) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "expected HOST:PORT, got '" + text + "'");
        }
    }

    /** A comma-separated list of HOST:PORT (the replicas of a mgmt group), in order, at least one. */
    public static java.util.List<HostPort> parseList(String text) {
        if (text == null || text.isBlank()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "expected HOST:PORT[,HOST:PORT...], got '" + text + "'");
        }
        return java.util.Arrays.stream(text.split(",")).map(String::trim).map(HostPort::parse).toList();
    }

    public InetSocketAddress toSocketAddress() {
        return new InetSocketAddress(host, port);
    }

    @Override
    public String toString() {
        return host + ":" + port;
    }
}
