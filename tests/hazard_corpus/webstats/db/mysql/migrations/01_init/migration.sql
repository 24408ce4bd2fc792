SET NAMES utf8mb4; -- safe: PA401 MySQL SQL: skipped with a notice
CREATE TABLE `website` (
    `website_id` VARCHAR(36) NOT NULL,
    PRIMARY KEY (`website_id`)
) DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
