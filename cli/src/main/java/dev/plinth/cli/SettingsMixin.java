package dev.plinth.cli;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** --config FILE and --set KEY=VALUE, for every command that reads settings. */
final class SettingsMixin {
    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "Override a setting (see `plinth settings`); repeatable.")
    List<String> overrides = new ArrayList<>();

    @Option(names = "--config", paramLabel = "FILE", description = "Settings file (Java properties).")
    Path configFile;

    /** Settings from the file, then the overrides, in that order. */
    Config config() {
        Config config = configFile == null ? Config.defaults() : Config.load(configFile);
        for (String entry : overrides) {
            int equals = entry.indexOf('=');
            if (equals <= 0) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--set takes KEY=VALUE, got '" + entry + "'");
            }
            config = config.with(entry.substring(0, equals).trim(), entry.substring(equals + 1));
        }
        return config;
    }
}
