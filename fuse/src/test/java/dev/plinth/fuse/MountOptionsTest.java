package dev.plinth.fuse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import org.junit.jupiter.api.Test;

class MountOptionsTest {
    @Test
    void hardByDefaultAndAllowOtherForRoot() {
        MountOptions options = MountOptions.parse("", Config.defaults(), true);
        assertThat(options.config().get(Settings.CLIENT_RETRY_TIMEOUT_MILLIS)).isZero();
        assertThat(options.allowOther()).isTrue();
        assertThat(MountOptions.parse(null, Config.defaults(), false).allowOther()).isFalse();
    }

    @Test
    void fstabStyleOptions() {
        MountOptions options = MountOptions.parse("rw,_netdev,user_xattr,flock,soft,timeo=2.5,ro,attr_timeout=0.5,"
                + "entry_timeout=3,threads=8,client.readahead-bytes=32m", Config.defaults(), false);
        assertThat(options.readOnly()).isTrue();
        assertThat(options.config().get(Settings.CLIENT_RETRY_TIMEOUT_MILLIS)).isEqualTo(2500);
        assertThat(options.config().get(Settings.MOUNT_ATTR_TIMEOUT_MILLIS)).isEqualTo(500);
        assertThat(options.config().get(Settings.MOUNT_ENTRY_TIMEOUT_MILLIS)).isEqualTo(3000);
        assertThat(options.config().get(Settings.MOUNT_THREADS)).isEqualTo(8);
        assertThat(options.config().get(Settings.CLIENT_READAHEAD_BYTES)).isEqualTo(32L << 20);
        assertThat(MountOptions.parse("soft", Config.defaults(), false).config().get(Settings.CLIENT_RETRY_TIMEOUT_MILLIS))
                .isEqualTo(MountOptions.DEFAULT_SOFT_TIMEOUT_MILLIS);
    }

    @Test
    void devicesAndSetIdBitsOnlyWhenAskedFor() {
        MountOptions plain = MountOptions.parse("", Config.defaults(), true);
        assertThat(plain.devices()).isFalse();
        assertThat(plain.setIdBits()).isFalse();
        MountOptions asked = MountOptions.parse("dev,suid", Config.defaults(), true);
        assertThat(asked.devices()).isTrue();
        assertThat(asked.setIdBits()).isTrue();
        assertThat(MountOptions.parse("dev,nodev,suid,nosuid", Config.defaults(), true).devices()).isFalse();
    }

    @Test
    void badOptionsAreRefusedWithAReason() {
        assertThatThrownBy(() -> MountOptions.parse("nosuchflag", Config.defaults(), false))
                .isInstanceOf(PlinthException.class).hasMessageContaining("nosuchflag")
                .extracting(e -> ((PlinthException) e).code()).isEqualTo(ErrorCode.INVALID_ARGUMENT);
        assertThatThrownBy(() -> MountOptions.parse("timeo=-1", Config.defaults(), false)).hasMessageContaining("seconds");
        assertThatThrownBy(() -> MountOptions.parse("no.such-setting=1", Config.defaults(), false)).hasMessageContaining("unknown setting");
    }
}
